//! The JVM's charset: the GPU supports only UTF-8 in some expressions.

use super::Rule;
use crate::tuner::Tuner;

pub(crate) struct FileEncoding;

impl Rule for FileEncoding {
    fn name(&self) -> &'static str {
        "file_encoding"
    }

    fn apply(&self, t: &mut Tuner<'_>) {
        if let Some(enc) = &t.inp.file_encoding
            && !matches!(enc.to_ascii_lowercase().as_str(), "utf-8" | "utf8")
        {
            t.comment(
                "file.encoding should be [UTF-8] because GPU only supports the charset when using some expressions.",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuner::testing::{apply, run_with};
    use crate::tuner::{Mode, Worker};

    #[test]
    fn only_utf8_passes() {
        let w = Worker::default();
        let mut inp = run_with(4, 1, &[]);
        for (enc, comments) in [("UTF-8", 0), ("utf8", 0), ("ISO-8859-1", 1)] {
            inp.file_encoding = Some(enc.into());
            assert_eq!(
                apply(&FileEncoding, Mode::Profiling, &inp, &w)
                    .comments
                    .len(),
                comments,
                "{enc}"
            );
        }
    }
}
