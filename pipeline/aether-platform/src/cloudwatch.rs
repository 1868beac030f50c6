//! CloudWatch (aws-sdk-cloudwatch): the metrics of aether's runs and their alarms.
//!
//! Like the EMR client, credentials, region and endpoint come from the SDK's standard
//! configuration (the credential chain and profiles, `AWS_ENDPOINT_URL`,
//! `AWS_ENDPOINT_URL_CLOUDWATCH`, a profile's `endpoint_url`), so the command works unchanged
//! against an emulator. PutMetricData is sent in requests of at most [`MAX_DATUMS`] data points;
//! alarms are read with DescribeAlarms (by name, 100 a call) and written with PutMetricAlarm.

use crate::{PlatformError, Result};
use aws_sdk_cloudwatch::Client;
use aws_sdk_cloudwatch::primitives::DateTime;
use aws_sdk_cloudwatch::types::{
    ComparisonOperator, Dimension, MetricDatum, StandardUnit, Statistic,
};

/// The SDK, for callers that build their own client (an explicit endpoint and credentials).
pub use aws_sdk_cloudwatch as sdk;

/// Data points per PutMetricData request (CloudWatch takes up to 1,000 and 1 MB).
pub const MAX_DATUMS: usize = 500;

/// The unit of a metric, as CloudWatch names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Milliseconds,
    Count,
    /// A ratio or an amount of money (CloudWatch has no currency unit).
    None,
}

impl Unit {
    /// CloudWatch's name of the unit.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Milliseconds => "Milliseconds",
            Unit::Count => "Count",
            Unit::None => "None",
        }
    }

    fn sdk(self) -> StandardUnit {
        match self {
            Unit::Milliseconds => StandardUnit::Milliseconds,
            Unit::Count => StandardUnit::Count,
            Unit::None => StandardUnit::None,
        }
    }
}

/// One data point of a metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Datum {
    pub metric: String,
    pub unit: Unit,
    pub value: f64,
    pub timestamp_ms: i64,
    /// (name, value), in order.
    pub dimensions: Vec<(String, String)>,
}

/// The statistic an alarm watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlarmStatistic {
    Maximum,
    Minimum,
}

/// Which side of the threshold is bad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    GreaterThanThreshold,
    LessThanThreshold,
}

/// A metric alarm as aether defines it (one metric, one evaluation period, missing data not
/// breaching).
#[derive(Clone, Debug, PartialEq)]
pub struct AlarmSpec {
    pub name: String,
    pub description: String,
    pub namespace: String,
    pub metric: String,
    pub dimensions: Vec<(String, String)>,
    pub statistic: AlarmStatistic,
    pub comparison: Comparison,
    pub threshold: f64,
    pub period_s: i32,
    /// What the alarm notifies (SNS topic ARNs).
    pub actions: Vec<String>,
}

fn dims(d: &[(String, String)]) -> Vec<Dimension> {
    d.iter()
        .map(|(n, v)| Dimension::builder().name(n).value(v).build())
        .collect()
}

fn sdk<E, R>(what: &str, e: aws_sdk_cloudwatch::error::SdkError<E, R>) -> PlatformError
where
    E: aws_sdk_cloudwatch::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    crate::emr::sdk_error("CloudWatch", what, e)
}

/// A CloudWatch client.
pub struct CloudWatch {
    client: Client,
}

impl CloudWatch {
    /// A client from the SDK's standard configuration, in `region` when given.
    pub async fn from_env(region: Option<String>) -> CloudWatch {
        let conf = crate::aws_loader(region).load().await;
        CloudWatch {
            client: Client::new(&conf),
        }
    }

    /// Over a client built by the caller.
    pub fn new(client: Client) -> CloudWatch {
        CloudWatch { client }
    }

    /// Send data points of `namespace`, [`MAX_DATUMS`] a request; an error names the request
    /// that failed (the ones before it were sent).
    pub async fn put_metric_data(&self, namespace: &str, data: &[Datum]) -> Result<()> {
        for chunk in data.chunks(MAX_DATUMS) {
            let datums: Vec<MetricDatum> = chunk
                .iter()
                .map(|d| {
                    MetricDatum::builder()
                        .metric_name(&d.metric)
                        .unit(d.unit.sdk())
                        .value(d.value)
                        .timestamp(DateTime::from_millis(d.timestamp_ms))
                        .set_dimensions(Some(dims(&d.dimensions)))
                        .build()
                })
                .collect();
            self.client
                .put_metric_data()
                .namespace(namespace)
                .set_metric_data(Some(datums))
                .send()
                .await
                .map_err(|e| sdk(&format!("PutMetricData ({namespace})"), e))?;
        }
        Ok(())
    }

    /// The alarms of these names that exist, as aether reads them back.
    pub async fn alarms(&self, names: &[String]) -> Result<Vec<AlarmSpec>> {
        let mut out = Vec::new();
        for chunk in names.chunks(100) {
            let mut pages = self
                .client
                .describe_alarms()
                .set_alarm_names(Some(chunk.to_vec()))
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| sdk("DescribeAlarms", e))?;
                for a in page.metric_alarms() {
                    out.push(AlarmSpec {
                        name: a.alarm_name().unwrap_or_default().to_string(),
                        description: a.alarm_description().unwrap_or_default().to_string(),
                        namespace: a.namespace().unwrap_or_default().to_string(),
                        metric: a.metric_name().unwrap_or_default().to_string(),
                        dimensions: a
                            .dimensions()
                            .iter()
                            .map(|d| {
                                (
                                    d.name().unwrap_or_default().to_string(),
                                    d.value().unwrap_or_default().to_string(),
                                )
                            })
                            .collect(),
                        statistic: match a.statistic() {
                            Some(Statistic::Minimum) => AlarmStatistic::Minimum,
                            _ => AlarmStatistic::Maximum,
                        },
                        comparison: match a.comparison_operator() {
                            Some(ComparisonOperator::LessThanThreshold) => {
                                Comparison::LessThanThreshold
                            }
                            _ => Comparison::GreaterThanThreshold,
                        },
                        threshold: a.threshold().unwrap_or(f64::NAN),
                        period_s: a.period().unwrap_or(0),
                        actions: a.alarm_actions().to_vec(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Create the alarm, or replace the one of that name.
    pub async fn put_alarm(&self, a: &AlarmSpec) -> Result<()> {
        self.client
            .put_metric_alarm()
            .alarm_name(&a.name)
            .alarm_description(&a.description)
            .namespace(&a.namespace)
            .metric_name(&a.metric)
            .set_dimensions(Some(dims(&a.dimensions)))
            .statistic(match a.statistic {
                AlarmStatistic::Maximum => Statistic::Maximum,
                AlarmStatistic::Minimum => Statistic::Minimum,
            })
            .comparison_operator(match a.comparison {
                Comparison::GreaterThanThreshold => ComparisonOperator::GreaterThanThreshold,
                Comparison::LessThanThreshold => ComparisonOperator::LessThanThreshold,
            })
            .threshold(a.threshold)
            .period(a.period_s)
            .evaluation_periods(1)
            .treat_missing_data("notBreaching")
            .set_alarm_actions((!a.actions.is_empty()).then(|| a.actions.clone()))
            .send()
            .await
            .map_err(|e| sdk(&format!("PutMetricAlarm {}", a.name), e))?;
        Ok(())
    }
}
