"""Make the shuffle-skew event log of tests/golden/profile-extra (pyspark 3.5, local mode).

One job repartitions 2.4 million rows by a key that is 0 for 90% of them: one reducer reads
about 9 times the mean shuffle bytes (well over 100 MiB), which both the reference profiler's
shuffle_skew_check and aether's profile_shuffle_skew_check flag.

    python3 make_skew_log.py OUT_DIR      # writes OUT_DIR/<app id>.zstd
"""
import sys

from pyspark.sql import SparkSession, functions as F

out = sys.argv[1]
spark = (
    SparkSession.builder.master("local[2]")
    .appName("shuffle_skew")
    .config("spark.eventLog.enabled", "true")
    .config("spark.eventLog.dir", out)
    .config("spark.eventLog.compress", "true")
    .config("spark.eventLog.compression.codec", "zstd")
    .config("spark.sql.adaptive.enabled", "false")
    .config("spark.sql.shuffle.partitions", "8")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
rows = (
    spark.range(0, 2_400_000, 1, 4)
    .withColumn("key", F.when(F.col("id") % 10 == 0, F.col("id") % 7 + 1).otherwise(F.lit(0)))
    .withColumn("payload", F.sha2(F.col("id").cast("string"), 256))
)
rows.repartition(8, "key").write.format("noop").mode("overwrite").save()
spark.stop()
