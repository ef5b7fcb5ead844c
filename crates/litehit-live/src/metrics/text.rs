//! The Prometheus text format 0.0.4 (the format `promtool check metrics` reads, and what
//! client libraries serve unless OpenMetrics is asked for), written from the same walk over
//! the snapshot as OpenMetrics ([`super::Exposition`]): the samples are the same lines, only
//! the metadata differs.
//!
//! ```text
//! OpenMetrics                                  text 0.0.4
//! # HELP litehit_requests …                    # HELP litehit_requests_total …
//! # TYPE litehit_requests counter              # TYPE litehit_requests_total counter
//! # TYPE litehit_build info                    # TYPE litehit_build_info gauge
//! HELP escapes \ " and newline                 HELP escapes \ and newline
//! # EOF                                        (nothing)
//! ```
//!
//! Label values arrive escaped (both formats escape `\`, `"` and newline alike).

use std::fmt::{self, Write as _};

use super::{Exposition, Family, Kind, Samples};

/// Writes families in the text format 0.0.4 into a `String`.
pub(super) struct TextWriter<'a> {
    out: &'a mut String,
}

impl<'a> TextWriter<'a> {
    pub(super) fn new(out: &'a mut String) -> Self {
        Self { out }
    }
}

/// A family's name in samples, `HELP` and `TYPE` alike: counters end in `_total` and info
/// metrics in `_info`; and its 0.0.4 type (an info metric is a gauge of value 1).
fn sample_name(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Counter => ("_total", "counter"),
        Kind::Gauge => ("", "gauge"),
        Kind::Info => ("_info", "gauge"),
    }
}

impl Exposition for TextWriter<'_> {
    fn family(
        &mut self,
        family: Family<'_>,
        samples: &mut dyn FnMut(&mut dyn Samples) -> fmt::Result,
    ) -> fmt::Result {
        let (suffix, type_name) = sample_name(family.kind);
        let out = &mut *self.out;
        write!(out, "# HELP {}{suffix} ", family.name)?;
        for c in family.help.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        writeln!(out, "\n# TYPE {}{suffix} {type_name}", family.name)?;
        samples(&mut TextSamples {
            out,
            name: family.name,
            suffix,
        })
    }
}

/// The samples of one family.
struct TextSamples<'a> {
    out: &'a mut String,
    name: &'a str,
    suffix: &'static str,
}

impl Samples for TextSamples<'_> {
    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result {
        self.out.push_str(self.name);
        self.out.push_str(self.suffix);
        for (index, (key, value)) in labels.iter().enumerate() {
            self.out.push(if index == 0 { '{' } else { ',' });
            self.out.push_str(key);
            self.out.push_str("=\"");
            self.out.push_str(value);
            self.out.push('"');
        }
        if !labels.is_empty() {
            self.out.push('}');
        }
        writeln!(self.out, " {value}")
    }
}
