-- The profiler's system_properties: the JVM system properties it shows (encoding, Java, OS,
-- the command line, the time zone).
SELECT app_id, key AS "propertyName", value AS "propertyValue"
FROM properties
WHERE category = 'system'
  AND key IN ('file.encoding', 'java.version', 'os.arch', 'os.name', 'os.version',
              'sun.java.command', 'user.timezone')
