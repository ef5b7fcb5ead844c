//! `--format NAME`: clap reads a [`TraceFormat`] through the core's own names and
//! descriptions, so the core needs no clap (it no longer derives `ValueEnum`), and the
//! possible values in `--help` stay the core's one list.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use litehit_core::formats::TraceFormat;

/// The value parser of `--format`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceFormatParser;

impl TraceFormatParser {
    fn possible() -> impl Iterator<Item = PossibleValue> {
        TraceFormat::ALL
            .into_iter()
            .map(|format| PossibleValue::new(format.name()).help(format.description()))
    }
}

impl TypedValueParser for TraceFormatParser {
    type Value = TraceFormat;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<TraceFormat, clap::Error> {
        // The names parser gives clap's own message for a wrong name, with the list.
        let name = PossibleValuesParser::new(Self::possible()).parse_ref(cmd, arg, value)?;
        Ok(TraceFormat::from_name(&name).expect("the parser accepts only the formats' names"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(Self::possible()))
    }
}
