//! The two exposition formats `/metrics` serves, and the choice between them from a scrape's
//! `Accept` header, as the Prometheus client libraries choose (client_golang's
//! `expfmt.NegotiateIncludingOpenMetrics`, client_python's `choose_encoder`): OpenMetrics only
//! when it is asked for, the classic text format 0.0.4 otherwise.
//!
//! ```text
//! Accept                                                   served
//! (none), */*, text/plain, anything else                   text/plain; version=0.0.4
//! application/openmetrics-text[;version=1.0.0|0.0.1]       application/openmetrics-text; version=1.0.0
//! both: the higher q wins, the first listed on a tie; q=0 is "not this"
//! ```
//!
//! Prometheus (2.x and 3.x) lists OpenMetrics first in its scrape `Accept` header, so it gets
//! OpenMetrics; `curl` and `promtool check metrics` get the classic format, which is the one
//! promtool reads.

/// An exposition format of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The Prometheus text format 0.0.4: counters' `HELP`/`TYPE` under their `_total` name, an
    /// info metric as a gauge `…_info` of value 1, no `# UNIT`, no `# EOF`.
    #[default]
    Text,
    /// OpenMetrics 1.0 text: families under their base name, `info` type, `# EOF` last.
    OpenMetrics,
}

/// The media type of [`Format::Text`].
const TEXT_MEDIA_TYPE: &str = "text/plain";
/// The media type of [`Format::OpenMetrics`].
const OPENMETRICS_MEDIA_TYPE: &str = "application/openmetrics-text";

impl Format {
    /// The reply's `Content-Type`.
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Text => "text/plain; version=0.0.4; charset=utf-8",
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// The format to answer a scrape whose `Accept` header is `accept` (`None` without one):
    /// the acceptable media range of highest quality that names a format served here
    /// (`text/plain` at version 0.0.4 or none; `application/openmetrics-text` at 1.0.0, 0.0.1
    /// or none), the first listed on a tie; [`Format::Text`] when none does, as a wildcard.
    #[must_use]
    pub fn negotiate(accept: Option<&str>) -> Self {
        let mut best: Option<(f64, Self)> = None;
        for range in accept.unwrap_or_default().split(',') {
            let mut parts = range.split(';');
            let media_type = parts.next().unwrap_or_default().trim();
            let mut quality = 1.0;
            let mut version = None;
            for parameter in parts {
                let Some((key, value)) = parameter.split_once('=') else {
                    continue;
                };
                let value = value.trim().trim_matches('"');
                match key.trim().to_ascii_lowercase().as_str() {
                    // An unreadable q is no preference for this range.
                    "q" => quality = value.parse::<f64>().unwrap_or(0.0),
                    "version" => version = Some(value),
                    _ => {}
                }
            }
            let format = if media_type.eq_ignore_ascii_case(OPENMETRICS_MEDIA_TYPE)
                && matches!(version, None | Some("1.0.0" | "0.0.1"))
            {
                Self::OpenMetrics
            } else if media_type.eq_ignore_ascii_case(TEXT_MEDIA_TYPE)
                && matches!(version, None | Some("0.0.4"))
            {
                Self::Text
            } else {
                continue;
            };
            if quality > 0.0 && best.is_none_or(|(best_quality, _)| quality > best_quality) {
                best = Some((quality, format));
            }
        }
        best.map_or(Self::Text, |(_, format)| format)
    }
}

#[cfg(test)]
mod tests {
    use super::Format::{OpenMetrics, Text};
    use super::*;

    #[test]
    fn openmetrics_only_when_asked_for() {
        for (accept, expected) in [
            (None, Text),
            (Some(""), Text),
            (Some("*/*"), Text),
            (Some("text/html"), Text),
            (Some("text/plain"), Text),
            (Some("application/json, */*;q=0.5"), Text),
            (Some("application/openmetrics-text"), OpenMetrics),
            (
                Some("Application/OpenMetrics-Text; Version=1.0.0"),
                OpenMetrics,
            ),
            (
                Some("application/openmetrics-text;version=\"0.0.1\""),
                OpenMetrics,
            ),
            // A version not served here is not this format.
            (Some("application/openmetrics-text;version=2.0.0"), Text),
            (Some("text/plain;version=1.0.0, */*"), Text),
            // Prometheus 2.42's scrape header.
            (
                Some(
                    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                     version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                ),
                OpenMetrics,
            ),
            // Prometheus 3's default scrape protocols, and one preferring the classic format.
            (
                Some(
                    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,\
                     application/openmetrics-text;version=0.0.1;q=0.4,\
                     text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,\
                     text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
                ),
                OpenMetrics,
            ),
            (
                Some("text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"),
                Text,
            ),
        ] {
            assert_eq!(Format::negotiate(accept), expected, "{accept:?}");
        }
    }

    #[test]
    fn quality_decides_and_zero_refuses() {
        for (accept, expected) in [
            (
                "text/plain;q=0.4, application/openmetrics-text;q=0.5",
                OpenMetrics,
            ),
            ("application/openmetrics-text;q=0.5, text/plain;q=0.6", Text),
            // A tie goes to the first listed.
            (
                "application/openmetrics-text;q=0.5, text/plain;q=0.5",
                OpenMetrics,
            ),
            ("text/plain;q=0.5, application/openmetrics-text;q=0.5", Text),
            ("application/openmetrics-text;q=0", Text),
            ("application/openmetrics-text;q=0.0, text/plain", Text),
            ("application/openmetrics-text;q=nonsense", Text),
            ("application/openmetrics-text ; q=0.001", OpenMetrics),
        ] {
            assert_eq!(Format::negotiate(Some(accept)), expected, "{accept:?}");
        }
    }

    #[test]
    fn content_types_name_their_version() {
        assert_eq!(
            Text.content_type(),
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            OpenMetrics.content_type(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
    }
}
