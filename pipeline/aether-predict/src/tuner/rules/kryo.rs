//! Kryo serialization: the GPU's registrator appended to the run's, and a buffer large enough
//! for GPU batches (512m, `KRYO_SERIALIZER_BUFFER`'s max in the reference's tuningConfigs.yaml).

use super::{Rule, with_class};
use crate::tuner::Tuner;
use crate::units::parse_bytes;

const REGISTRATOR: &str = "com.nvidia.spark.rapids.GpuKryoRegistrator";
const BUFFER_MAX_MIB: i64 = 512;

pub(crate) struct Kryo;

impl Rule for Kryo {
    fn name(&self) -> &'static str {
        "kryo"
    }

    fn applies(&self, t: &Tuner<'_>) -> bool {
        // (the run's value or one recommended, not Spark's default)
        t.current("spark.serializer")
            .is_some_and(|v| v.contains("org.apache.spark.serializer.KryoSerializer"))
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if let Some(v) = with_class(t.current("spark.kryo.registrator").as_deref(), REGISTRATOR) {
            t.set(
                "spark.kryo.registrator",
                v,
                "Kryo serialization: the GPU's registrator appended to the run's",
            );
        }
        let buffer_mib = t
            .current("spark.kryoserializer.buffer.max")
            .and_then(|v| parse_bytes(&v, true))
            .map(|b| b >> 20)
            .unwrap_or(0);
        if buffer_mib < BUFFER_MAX_MIB {
            t.set(
                "spark.kryoserializer.buffer.max",
                format!("{BUFFER_MAX_MIB}m"),
                "Kryo serialization: a buffer large enough for GPU batches (512m)",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    /// The Kryo variant (tests/golden/qual-variants): the run's registrator kept first, its
    /// 128m buffer raised to 512m; a 1g buffer kept.
    #[test]
    fn kryo_gets_the_gpu_registrator_and_a_large_buffer() {
        let w = Worker::default();
        let kryo = (
            "spark.serializer",
            "org.apache.spark.serializer.KryoSerializer",
        );
        let inp = run_with(
            4,
            1,
            &[
                kryo,
                ("spark.kryo.registrator", "com.example.Reg"),
                ("spark.kryoserializer.buffer.max", "128m"),
            ],
        );
        let a = apply(&Kryo, Mode::Qualification, &inp, &w);
        assert_eq!(
            a.value("spark.kryo.registrator"),
            Some("com.example.Reg,com.nvidia.spark.rapids.GpuKryoRegistrator")
        );
        assert_eq!(a.value("spark.kryoserializer.buffer.max"), Some("512m"));
        let inp = run_with(4, 1, &[kryo, ("spark.kryoserializer.buffer.max", "1g")]);
        let a = apply(&Kryo, Mode::Profiling, &inp, &w);
        assert_eq!(a.value("spark.kryoserializer.buffer.max"), None);
        assert!(
            apply(&Kryo, Mode::Profiling, &run_with(4, 1, &[]), &w)
                .sets
                .is_empty()
        );
    }
}
