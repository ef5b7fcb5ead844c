//! `--format NAME`: clap reads a [`FormatArg`] through the core's own names and descriptions
//! (so the core needs no clap: it does not derive `ValueEnum`), plus `openai`, the request
//! logs `litehit-tokenize` turns into standard rows, so the possible values in `--help` stay
//! one list.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use litehit_core::formats::TraceFormat;

/// What `--format` names: a trace format the core reads, or an OpenAI request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatArg {
    Trace(TraceFormat),
    /// OpenAI request bodies (or log records holding them), tokenized with `--tokenizer`.
    OpenAi,
}

impl FormatArg {
    /// The name of the OpenAI request-log format.
    pub const OPENAI: &'static str = "openai";

    /// The trace format, `None` for an OpenAI log.
    #[must_use]
    pub fn trace_format(self) -> Option<TraceFormat> {
        match self {
            Self::Trace(format) => Some(format),
            Self::OpenAi => None,
        }
    }
}

/// The value parser of `--format`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceFormatParser;

impl TraceFormatParser {
    fn possible() -> impl Iterator<Item = PossibleValue> {
        TraceFormat::ALL
            .into_iter()
            .map(|format| PossibleValue::new(format.name()).help(format.description()))
            .chain(std::iter::once(PossibleValue::new(FormatArg::OPENAI).help(
                "OpenAI request log (chat `messages`, `prompt`, `prompt_token_ids`), \
                     tokenized with --tokenizer",
            )))
    }
}

impl TypedValueParser for TraceFormatParser {
    type Value = FormatArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<FormatArg, clap::Error> {
        // The names parser gives clap's own message for a wrong name, with the list.
        let name = PossibleValuesParser::new(Self::possible()).parse_ref(cmd, arg, value)?;
        if name == FormatArg::OPENAI {
            return Ok(FormatArg::OpenAi);
        }
        Ok(FormatArg::Trace(
            TraceFormat::from_name(&name).expect("the parser accepts only the formats' names"),
        ))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(Self::possible()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_format_and_openai_parse() {
        let cmd = clap::Command::new("t");
        for format in TraceFormat::ALL {
            let value = std::ffi::OsString::from(format.name());
            assert_eq!(
                TraceFormatParser.parse_ref(&cmd, None, &value).unwrap(),
                FormatArg::Trace(format)
            );
        }
        let openai = std::ffi::OsString::from("openai");
        assert_eq!(
            TraceFormatParser.parse_ref(&cmd, None, &openai).unwrap(),
            FormatArg::OpenAi
        );
        assert!(
            TraceFormatParser
                .parse_ref(&cmd, None, std::ffi::OsStr::new("open"))
                .is_err()
        );
    }
}
