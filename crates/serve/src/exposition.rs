//! Metric families written in the format the scraper asked for: Prometheus'
//! text format 0.0.4, or OpenMetrics 1.0 when the `Accept` header prefers it
//! (Prometheus does). Both encoders are the `prometheus-client` crate's.
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NoLabelSet},
    metrics::MetricType,
    registry::Registry,
};

/// One family: its name (a counter's without `_total`, which the encoder
/// adds), help, and samples.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: String,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Debug, Clone)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

#[derive(Debug, Clone)]
pub enum Value {
    Count(u64),
    Number(f64),
    /// Per-bucket (not cumulative) counts at each upper bound, in seconds.
    Histogram {
        sum_seconds: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

/// The two formats a scrape can get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text004,
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text004 => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// OpenMetrics when `accept` ranks it above the text format: a higher
    /// q, or the same q listed first (Prometheus lists its favourite first).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let ranked: Vec<(String, f64)> = accept
            .unwrap_or("")
            .split(',')
            .map(|range| {
                let mut parts = range.split(';').map(str::trim);
                let media = parts.next().unwrap_or("").to_ascii_lowercase();
                let q = parts
                    .filter_map(|p| p.strip_prefix("q="))
                    .find_map(|v| v.parse::<f64>().ok())
                    .unwrap_or(1.0);
                (media, q)
            })
            .collect();
        let find = |media: &str| {
            ranked
                .iter()
                .enumerate()
                .filter(|(_, (m, _))| m == media)
                .max_by(|(_, a), (_, b)| a.1.total_cmp(&b.1))
                .map(|(i, (_, q))| (*q, i))
        };
        match (find("application/openmetrics-text"), find("text/plain")) {
            (Some((om_q, _)), None) if om_q > 0.0 => Format::OpenMetrics,
            (Some((om_q, om_i)), Some((text_q, text_i)))
                if om_q > text_q || (om_q == text_q && om_q > 0.0 && om_i < text_i) =>
            {
                Format::OpenMetrics
            }
            _ => Format::Text004,
        }
    }
}

/// The families of one scrape, lent to the encoder.
#[derive(Debug)]
struct Scrape(Vec<Family>);

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let kind = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
            };
            // The encoder ends the help with a full stop of its own.
            let help = f.help.trim_end_matches('.');
            let mut family = encoder.encode_descriptor(&f.name, help, None, kind)?;
            for s in &f.samples {
                let mut metric = family.encode_family(&s.labels)?;
                match (&s.value, f.kind) {
                    (Value::Count(v), Kind::Counter) => {
                        metric.encode_counter::<NoLabelSet, u64, f64>(v, None)?
                    }
                    (Value::Number(v), Kind::Counter) => {
                        metric.encode_counter::<NoLabelSet, f64, f64>(v, None)?
                    }
                    (Value::Count(v), _) => metric.encode_gauge(&(*v as i64))?,
                    (Value::Number(v), _) => metric.encode_gauge(v)?,
                    (
                        Value::Histogram {
                            sum_seconds,
                            count,
                            buckets,
                        },
                        _,
                    ) => metric.encode_histogram::<NoLabelSet>(
                        *sum_seconds,
                        *count,
                        buckets,
                        None,
                    )?,
                }
            }
        }
        Ok(())
    }
}

/// `families` in `format`.
pub fn encode(families: Vec<Family>, format: Format) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(families)));
    let mut out = String::new();
    match format {
        Format::Text004 => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?
        }
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry)?,
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Debian 12's Prometheus (2.42) sends.
    const PROMETHEUS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn openmetrics_only_when_the_scraper_prefers_it() {
        use Format::{OpenMetrics, Text004};
        for (accept, want) in [
            (Some(PROMETHEUS), OpenMetrics),
            (None, Text004),
            (Some("*/*"), Text004),
            (Some("text/plain;version=0.0.4"), Text004),
            (Some("text/plain, application/openmetrics-text"), Text004),
            (
                Some("application/openmetrics-text, text/plain"),
                OpenMetrics,
            ),
            (
                Some("text/plain;q=0.5, application/openmetrics-text;q=0.6"),
                OpenMetrics,
            ),
            (Some("application/openmetrics-text;q=0"), Text004),
            (Some("Application/OpenMetrics-Text; q=0.2"), OpenMetrics),
            (Some("application/openmetrics-text;q=abc,;;,"), OpenMetrics),
        ] {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
    }
}
