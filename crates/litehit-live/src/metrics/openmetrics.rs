//! OpenMetrics text through `prometheus-client` (the Prometheus project's own Rust client):
//! the [`super::Exposition`] walk over the snapshot, handed to its [`DescriptorEncoder`] by the
//! [`prometheus_client::collector::Collector`] a scrape runs; the registry writes `# EOF`.
//!
//! `prometheus-client` writes help text and label values as given: label values arrive
//! escaped, and help text is escaped here (`\`, `"` and newline, as OpenMetrics requires).

use std::borrow::Cow;
use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::{Exposition, Family, Kind, Samples};

/// Writes families into a collector's [`DescriptorEncoder`].
pub(super) struct OpenMetricsWriter<'a>(pub(super) DescriptorEncoder<'a>);

/// `help` escaped for an OpenMetrics `# HELP` line: `\`, `"` and newline, as a label value.
fn escaped_help(help: &str) -> Cow<'_, str> {
    super::escaped(help)
}

impl Exposition for OpenMetricsWriter<'_> {
    fn family(
        &mut self,
        family: Family<'_>,
        samples: &mut dyn FnMut(&mut dyn Samples) -> fmt::Result,
    ) -> fmt::Result {
        let metric_type = match family.kind {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
            Kind::Info => MetricType::Info,
        };
        let help = escaped_help(family.help);
        let metric = self
            .0
            .encode_descriptor(family.name, &help, None, metric_type)?;
        samples(&mut OpenMetricsSamples {
            metric: Some(metric),
            kind: family.kind,
        })
    }
}

/// The samples of one family. A sample without labels is its family's only one, and takes
/// the encoder (`encode_family` with no labels would write `{}`).
struct OpenMetricsSamples<'a> {
    metric: Option<MetricEncoder<'a>>,
    kind: Kind,
}

fn encode_value(kind: Kind, metric: MetricEncoder<'_>, value: u64) -> fmt::Result {
    match kind {
        Kind::Counter => ConstCounter::new(value).encode(metric),
        Kind::Gauge | Kind::Info => ConstGauge::new(value).encode(metric),
    }
}

impl Samples for OpenMetricsSamples<'_> {
    fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> fmt::Result {
        if self.kind == Kind::Info {
            // An info sample's value is 1 by definition (the walk passes 1).
            return self.metric.as_mut().ok_or(fmt::Error)?.encode_info(&labels);
        }
        if labels.is_empty() {
            let metric = self.metric.take().ok_or(fmt::Error)?;
            return encode_value(self.kind, metric, value);
        }
        let metric = self.metric.as_mut().ok_or(fmt::Error)?;
        encode_value(self.kind, metric.encode_family(&labels)?, value)
    }
}
