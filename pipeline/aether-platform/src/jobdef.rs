//! What a Spark job is, so aether can run it again: the spark-submit command line (main
//! resource, class, arguments, options and `--conf`s), read from the `sun.java.command` system
//! property a log's EnvironmentUpdate holds or given by the user (`--job "spark-submit …"`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One Spark job as spark-submit takes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobDefinition {
    /// The application: a `.py` script, a jar, or an R file (a path or URL).
    pub main: String,
    /// `--class` of a jar application.
    pub class: Option<String>,
    /// The application's own arguments.
    pub args: Vec<String>,
    /// `--conf key=value` (and the options spark-submit turns into properties, such as
    /// `--executor-memory`, as their property names).
    pub conf: BTreeMap<String, String>,
    /// Other spark-submit options with their values, in order (`--jars`, `--py-files`, …).
    pub options: Vec<(String, Option<String>)>,
}

/// Why a command line is not a job aether can run again.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JobDefinitionError {
    #[error("not a spark-submit command line: {0:?}")]
    NotSparkSubmit(String),
    #[error(
        "the job was an interactive {0} (a shell or notebook): its code is not in the log; give it as --job \"spark-submit … job.py args\""
    )]
    Interactive(String),
    #[error("spark-submit option {0} has no value")]
    MissingValue(String),
    #[error("no application (script or jar) in the command line")]
    NoMain,
}

/// spark-submit options that take a value, and the property each one sets (if any).
const VALUED: &[(&str, Option<&str>)] = &[
    ("--master", Some("spark.master")),
    ("--deploy-mode", Some("spark.submit.deployMode")),
    ("--class", None),
    ("--name", Some("spark.app.name")),
    ("--jars", None),
    ("--packages", None),
    ("--exclude-packages", None),
    ("--repositories", None),
    ("--py-files", None),
    ("--files", None),
    ("--archives", None),
    ("--conf", None),
    ("-c", None),
    ("--properties-file", None),
    ("--driver-memory", Some("spark.driver.memory")),
    (
        "--driver-java-options",
        Some("spark.driver.extraJavaOptions"),
    ),
    (
        "--driver-library-path",
        Some("spark.driver.extraLibraryPath"),
    ),
    ("--driver-class-path", Some("spark.driver.extraClassPath")),
    ("--executor-memory", Some("spark.executor.memory")),
    ("--proxy-user", None),
    ("--driver-cores", Some("spark.driver.cores")),
    ("--total-executor-cores", Some("spark.cores.max")),
    ("--executor-cores", Some("spark.executor.cores")),
    ("--queue", Some("spark.yarn.queue")),
    ("--num-executors", Some("spark.executor.instances")),
    ("--principal", None),
    ("--keytab", None),
];

/// The main resources of Spark's interactive shells.
const SHELLS: &[&str] = &[
    "pyspark-shell",
    "spark-shell",
    "sparkr-shell",
    "spark-internal-shell",
];

impl JobDefinition {
    /// Parse `sun.java.command` (`org.apache.spark.deploy.SparkSubmit [options] app [args]`) or
    /// a `spark-submit [options] app [args]` command line. The JVM writes the command line
    /// joined by spaces, so a value with spaces in it cannot be told apart from the next token:
    /// such jobs must be given with `--job`.
    pub fn parse(command_line: &str) -> Result<JobDefinition, JobDefinitionError> {
        JobDefinition::from_args(&split_words(command_line))
    }

    /// The job of a command given word by word, as an EMR step's `command-runner.jar` arguments
    /// are (`spark-submit`, options, the application, its arguments): values with spaces in
    /// them stay whole.
    pub fn from_args(tokens: &[String]) -> Result<JobDefinition, JobDefinitionError> {
        let mut it = tokens.iter().map(String::as_str).peekable();
        match it.next() {
            Some(first)
                if first == "org.apache.spark.deploy.SparkSubmit"
                    || first.rsplit('/').next() == Some("spark-submit") => {}
            _ => return Err(JobDefinitionError::NotSparkSubmit(tokens.join(" "))),
        }
        let mut d = JobDefinition::default();
        while let Some(tok) = it.next() {
            if let Some((name, prop)) = VALUED
                .iter()
                .find(|(n, _)| *n == tok || tok.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
            {
                let value = match tok.split_once('=') {
                    Some((_, v)) if tok.starts_with("--") && tok.len() > name.len() => {
                        v.to_string()
                    }
                    _ => it
                        .next()
                        .ok_or_else(|| JobDefinitionError::MissingValue(name.to_string()))?
                        .to_string(),
                };
                match (*name, prop) {
                    ("--conf" | "-c", _) => {
                        let (k, v) = value.split_once('=').unwrap_or((value.as_str(), ""));
                        d.conf.insert(k.to_string(), v.to_string());
                    }
                    ("--class", _) => d.class = Some(value),
                    (_, Some(p)) => {
                        d.conf.insert(p.to_string(), value);
                    }
                    (n, None) => d.options.push((n.to_string(), Some(value))),
                }
            } else if tok.starts_with('-') && d.main.is_empty() {
                // flags without a value: --verbose, --supervise
                d.options.push((tok.to_string(), None));
            } else {
                d.main = tok.to_string();
                d.args = it.map(String::from).collect();
                break;
            }
        }
        let shell_class = d.class.as_deref().is_some_and(|c| {
            c == "org.apache.spark.repl.Main" || c.ends_with(".SparkSQLCLIDriver")
        });
        if SHELLS.contains(&d.main.as_str()) || shell_class {
            let what = if d.main.is_empty() {
                d.class.clone().unwrap_or_default()
            } else {
                d.main.clone()
            };
            return Err(JobDefinitionError::Interactive(what));
        }
        if d.main.is_empty() {
            return Err(JobDefinitionError::NoMain);
        }
        Ok(d)
    }

    /// The spark-submit arguments (without the program name) with `overrides` merged over the
    /// job's own `--conf`s.
    pub fn submit_args(&self, overrides: &BTreeMap<String, String>) -> Vec<String> {
        let mut out = Vec::new();
        for (name, value) in &self.options {
            out.push(name.clone());
            if let Some(v) = value {
                out.push(v.clone());
            }
        }
        if let Some(c) = &self.class {
            out.push("--class".into());
            out.push(c.clone());
        }
        let mut conf = self.conf.clone();
        conf.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (k, v) in conf {
            out.push("--conf".into());
            out.push(format!("{k}={v}"));
        }
        out.push(self.main.clone());
        out.extend(self.args.iter().cloned());
        out
    }
}

/// Words of a command line: blanks separate them; single and double quotes group (as a shell
/// would, without expansions). `sun.java.command` has no quotes, a user's `--job` may.
pub(crate) fn split_words(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in s.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_job_from_a_real_log() {
        // rapids-tools' java_udf_eventlog
        let d = JobDefinition::parse(
            "org.apache.spark.deploy.SparkSubmit --master local[1] --jars /x/integer_multiply_by_2.jar tmp/scripts/java_udf_job.py /x/tmp /x/integer_multiply_by_2.jar",
        )
        .unwrap();
        assert_eq!(d.main, "tmp/scripts/java_udf_job.py");
        assert_eq!(d.args, ["/x/tmp", "/x/integer_multiply_by_2.jar"]);
        assert_eq!(d.conf["spark.master"], "local[1]");
        assert_eq!(
            d.options,
            [(
                "--jars".to_string(),
                Some("/x/integer_multiply_by_2.jar".to_string())
            )]
        );
        let o = BTreeMap::from([("spark.master".to_string(), "local[2]".to_string())]);
        assert_eq!(
            d.submit_args(&o),
            [
                "--jars",
                "/x/integer_multiply_by_2.jar",
                "--conf",
                "spark.master=local[2]",
                "tmp/scripts/java_udf_job.py",
                "/x/tmp",
                "/x/integer_multiply_by_2.jar"
            ]
        );
    }

    #[test]
    fn an_emr_steps_arguments_keep_values_with_spaces() {
        let args: Vec<String> = [
            "spark-submit",
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.driver.extraJavaOptions=-Da=1 -Db=2",
            "s3://b/job.py",
            "--label",
            "a b",
        ]
        .map(String::from)
        .to_vec();
        let d = JobDefinition::from_args(&args).unwrap();
        assert_eq!(d.main, "s3://b/job.py");
        assert_eq!(d.args, ["--label", "a b"]);
        assert_eq!(d.conf["spark.driver.extraJavaOptions"], "-Da=1 -Db=2");
        assert_eq!(d.conf["spark.submit.deployMode"], "cluster");
        assert!(JobDefinition::from_args(&["hadoop-streaming".to_string()]).is_err());
    }

    #[test]
    fn a_jar_job_with_confs() {
        let d = JobDefinition::parse(
            "org.apache.spark.deploy.SparkSubmit --master yarn --deploy-mode cluster --conf spark.executor.cores=4 --executor-memory 20g --class com.x.Etl s3://b/etl.jar 2026-12-01 --full",
        )
        .unwrap();
        assert_eq!(d.class.as_deref(), Some("com.x.Etl"));
        assert_eq!(d.main, "s3://b/etl.jar");
        assert_eq!(d.args, ["2026-12-01", "--full"]);
        assert_eq!(d.conf["spark.submit.deployMode"], "cluster");
        assert_eq!(d.conf["spark.executor.memory"], "20g");
        assert_eq!(d.conf["spark.executor.cores"], "4");
    }

    #[test]
    fn shells_and_notebooks_are_refused_with_the_way_out() {
        for cmd in [
            "org.apache.spark.deploy.SparkSubmit --conf spark.driver.memory=3g pyspark-shell",
            "org.apache.spark.deploy.SparkSubmit --class org.apache.spark.repl.Main --name Spark shell spark-shell",
        ] {
            let e = JobDefinition::parse(cmd).unwrap_err();
            assert!(
                matches!(e, JobDefinitionError::Interactive(_)),
                "{cmd}: {e:?}"
            );
            assert!(e.to_string().contains("--job"));
        }
        assert!(matches!(
            JobDefinition::parse("java -jar x.jar"),
            Err(JobDefinitionError::NotSparkSubmit(_))
        ));
        assert_eq!(
            JobDefinition::parse("spark-submit --master"),
            Err(JobDefinitionError::MissingValue("--master".into()))
        );
        assert_eq!(
            JobDefinition::parse("spark-submit --verbose"),
            Err(JobDefinitionError::NoMain)
        );
    }

    #[test]
    fn a_users_command_line_with_quotes() {
        let d = JobDefinition::parse(
            "/opt/spark/bin/spark-submit --name 'nightly etl' --conf=spark.sql.shuffle.partitions=64 job.py 'a b' c",
        )
        .unwrap();
        assert_eq!(d.conf["spark.app.name"], "nightly etl");
        assert_eq!(d.conf["spark.sql.shuffle.partitions"], "64");
        assert_eq!(d.args, ["a b", "c"]);
    }
}
