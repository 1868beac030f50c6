//! What an instance hour costs you. By default AWS's list prices (the committed catalog:
//! on-demand EC2 plus the EMR fee, labelled as list prices wherever a cost is shown); with the
//! `[prices]` settings, your own terms: a prices file per region and instance type (on-demand,
//! spot, a discount), the market predicted worker nodes are bought on, a discount on on-demand
//! EC2, the EMR fee as a share of EC2. One book serves qualify's costs and shape ranking, the
//! measured runs' costs and the reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aether_core::config::{Config, Market};
use serde::Serialize;

const LIST: &str = include_str!("../../../datasets/reference/emr/prices.csv");
const LIST_LABEL: &str = "AWS list prices (on-demand EC2 + EMR fee, Nov 2026, built in)";

/// A prices file that cannot be used, named with the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("prices {file}: cannot read: {error}")]
    Read { file: String, error: String },
    #[error(
        "prices {file}: missing column {column:?} (expected region,instance,ec2_usd_per_hour,emr_usd_per_hour[,spot_usd_per_hour][,discount_pct])"
    )]
    MissingColumn { file: String, column: String },
    #[error("prices {file}: unknown column {column:?} (known: {known})")]
    UnknownColumn {
        file: String,
        column: String,
        known: String,
    },
    #[error("prices {file}:{line}: {field} {value:?} is not valid: expected {expected}")]
    BadField {
        file: String,
        line: usize,
        field: String,
        value: String,
        expected: String,
    },
    #[error("prices {file}:{line}: {error}")]
    Csv {
        file: String,
        line: usize,
        error: String,
    },
    #[error("prices {file}:{line}: {region} {instance} is listed twice (line {first})")]
    Duplicate {
        file: String,
        line: usize,
        first: usize,
        region: String,
        instance: String,
    },
}

const COLUMNS: [&str; 6] = [
    "region",
    "instance",
    "ec2_usd_per_hour",
    "emr_usd_per_hour",
    "spot_usd_per_hour",
    "discount_pct",
];

/// One instance type's row.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Price {
    /// On-demand EC2, as the file (or AWS's list) gives it, before any discount.
    pub ec2_usd_per_hour: f64,
    pub emr_usd_per_hour: f64,
    /// The EC2 spot price, where a prices file gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spot_usd_per_hour: Option<f64>,
    /// This type's own discount on on-demand EC2 (over `prices.discount_pct`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discount_pct: Option<f64>,
}

/// Your terms, from the `[prices]` settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terms {
    pub file: Option<PathBuf>,
    pub market: Market,
    pub discount_pct: f64,
    pub emr_uplift_pct: Option<f64>,
}

impl Terms {
    /// The terms of these settings (`prices.file`, else `platform.emr.pricing_file`).
    pub fn of(cfg: &Config) -> Terms {
        let p = &cfg.prices;
        Terms {
            file: p
                .file
                .as_deref()
                .or(cfg.platform.emr.pricing_file.as_deref())
                .map(PathBuf::from),
            market: p.market.unwrap_or_default(),
            discount_pct: p.discount_pct.unwrap_or(0.0),
            emr_uplift_pct: p.emr_uplift_pct,
        }
    }

    /// AWS's list prices only.
    pub fn list() -> Terms {
        Terms::default()
    }

    /// These terms with another prices file (EMR on EKS's own).
    pub fn with_file(mut self, file: Option<&Path>) -> Terms {
        if let Some(f) = file {
            self.file = Some(f.to_path_buf());
        }
        self
    }

    fn is_list(&self) -> bool {
        *self == Terms::default()
    }
}

/// What one node hour costs, and how it was priced.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hourly {
    pub usd: f64,
    pub ec2_usd: f64,
    pub emr_usd: f64,
    /// The market it was priced at: on-demand where spot was asked but the file has no spot
    /// price for the type.
    pub market: Market,
}

/// Prices by (region, instance type), with the terms they are read with.
#[derive(Clone, Debug)]
pub struct PriceBook {
    rows: BTreeMap<(String, String), Price>,
    terms: Terms,
    /// What the costs are at, in words (list prices, or your terms).
    pub label: String,
}

fn parse(
    text: &str,
    file: &str,
    into: &mut BTreeMap<(String, String), Price>,
) -> Result<(), PriceError> {
    let mut r = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let h = r
        .headers()
        .map_err(|e| PriceError::Csv {
            file: file.into(),
            line: 1,
            error: e.to_string(),
        })?
        .clone();
    if let Some(c) = h.iter().find(|c| !COLUMNS.contains(c)) {
        return Err(PriceError::UnknownColumn {
            file: file.into(),
            column: c.into(),
            known: COLUMNS.join(", "),
        });
    }
    let col = |n: &str| h.iter().position(|c| c == n);
    let need = |n: &str| {
        col(n).ok_or_else(|| PriceError::MissingColumn {
            file: file.into(),
            column: n.into(),
        })
    };
    let (cr, ci, ce, cm) = (
        need("region")?,
        need("instance")?,
        need("ec2_usd_per_hour")?,
        need("emr_usd_per_hour")?,
    );
    let (cs, cd) = (col("spot_usd_per_hour"), col("discount_pct"));
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| PriceError::Csv {
            file: file.into(),
            line: e.position().map(|p| line_at(text, p)).unwrap_or(0),
            error: e.to_string(),
        })?;
        let line = rec.position().map(|p| line_at(text, p)).unwrap_or(0);
        let bad = |field: &str, value: &str, expected: &str| PriceError::BadField {
            file: file.into(),
            line,
            field: field.into(),
            value: value.into(),
            expected: expected.into(),
        };
        let num = |c: usize, max: f64, expected: &str| -> Result<f64, PriceError> {
            let v = rec.get(c).unwrap_or("");
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && (0.0..=max).contains(&x) => Ok(x),
                _ => Err(bad(h.get(c).unwrap_or("?"), v, expected)),
            }
        };
        let optional = |c: Option<usize>, max: f64, expected: &str| match c {
            Some(c) if !rec.get(c).unwrap_or("").is_empty() => num(c, max, expected).map(Some),
            _ => Ok(None),
        };
        const USD: &str = "USD per hour, 0 or more";
        let price = Price {
            ec2_usd_per_hour: num(ce, f64::MAX, USD)?,
            emr_usd_per_hour: num(cm, f64::MAX, USD)?,
            spot_usd_per_hour: optional(cs, f64::MAX, USD)?,
            discount_pct: optional(cd, 95.0, "a percentage from 0 to 95")?,
        };
        let region = rec.get(cr).unwrap_or("").to_string();
        let inst = rec.get(ci).unwrap_or("").to_string();
        if region.is_empty() {
            return Err(bad("region", "", "an AWS region such as us-east-1"));
        }
        if !inst.contains('.') {
            return Err(bad(
                "instance",
                &inst,
                "an EC2 instance type such as g5.xlarge",
            ));
        }
        let key = (region, inst);
        if let Some(first) = seen.insert(key.clone(), line) {
            return Err(PriceError::Duplicate {
                file: file.into(),
                line,
                first,
                region: key.0,
                instance: key.1,
            });
        }
        into.insert(key, price);
    }
    Ok(())
}

/// The file line a record starts on (csv's own count skips blank and comment lines).
fn line_at(text: &str, p: &csv::Position) -> usize {
    let mut at = (p.byte() as usize).min(text.len());
    let mut line = text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1;
    // a record's position is where the reader started: before the blank and comment lines
    while let Some(rest) = text.get(at..) {
        let this = rest.split('\n').next().unwrap_or("");
        if !(this.trim().is_empty() || this.trim_start().starts_with('#'))
            || this.len() == rest.len()
        {
            break;
        }
        at += this.len() + 1;
        line += 1;
    }
    line
}

impl PriceBook {
    /// AWS's list prices, then the terms' file over them (its rows replace the list's).
    pub fn load(terms: &Terms) -> Result<PriceBook, PriceError> {
        let mut rows = BTreeMap::new();
        parse(LIST, "built-in", &mut rows)?;
        if let Some(p) = &terms.file {
            let shown = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| PriceError::Read {
                file: shown.clone(),
                error: e.to_string(),
            })?;
            parse(&text, &shown, &mut rows)?;
        }
        Ok(PriceBook {
            rows,
            label: label(terms),
            terms: terms.clone(),
        })
    }

    /// Whether every cost is at AWS's list prices.
    pub fn is_list(&self) -> bool {
        self.terms.is_list()
    }

    /// The market predicted worker nodes are bought on.
    pub fn worker_market(&self) -> Market {
        self.terms.market
    }

    /// The row of an instance type, as the file or the list gives it.
    pub fn row(&self, region: &str, instance: &str) -> Option<Price> {
        self.rows
            .get(&(region.to_string(), instance.to_string()))
            .copied()
    }

    /// One node hour of `instance` bought on `market`: spot at the file's spot price (else
    /// on-demand, said in [`Hourly::market`]), on-demand EC2 less your discount; plus the EMR fee
    /// (the uplift's share of the on-demand list price when set). `emr`: whether the EMR fee is
    /// paid (not on EMR on EKS's nodes).
    pub fn hourly(
        &self,
        region: &str,
        instance: &str,
        market: Market,
        emr: bool,
    ) -> Option<Hourly> {
        let p = self.row(region, instance)?;
        let (ec2, market) = match (market, p.spot_usd_per_hour) {
            (Market::Spot, Some(s)) => (s, Market::Spot),
            _ => {
                let d = p.discount_pct.unwrap_or(self.terms.discount_pct);
                (p.ec2_usd_per_hour * (1.0 - d / 100.0), Market::OnDemand)
            }
        };
        let fee = match (emr, self.terms.emr_uplift_pct) {
            (false, _) => 0.0,
            (true, Some(u)) => p.ec2_usd_per_hour * u / 100.0,
            (true, None) => p.emr_usd_per_hour,
        };
        Some(Hourly {
            usd: ec2 + fee,
            ec2_usd: ec2,
            emr_usd: fee,
            market,
        })
    }
}

/// `AWS list prices (…)`, or `your prices: <file> over AWS list prices; workers on spot; …`.
fn label(t: &Terms) -> String {
    if t.is_list() {
        return LIST_LABEL.to_string();
    }
    let mut parts = vec![match &t.file {
        Some(f) => format!("your prices: {} over AWS list prices", f.display()),
        None => "your prices: AWS list prices".to_string(),
    }];
    if t.market == Market::Spot {
        parts.push("worker nodes on spot".into());
    }
    if t.discount_pct > 0.0 {
        parts.push(format!("{}% off on-demand EC2", t.discount_pct));
    }
    if let Some(u) = t.emr_uplift_pct {
        parts.push(format!("EMR fee {u}% of on-demand EC2"));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn list_prices_are_the_default_and_say_so() {
        let b = PriceBook::load(&Terms::list()).unwrap();
        assert!(b.is_list() && b.label.starts_with("AWS list prices"));
        // g5.xlarge in us-east-1: 1.006 EC2 + 0.2515 EMR (the committed catalog)
        let row = b.row("us-east-1", "g5.xlarge").unwrap();
        let h = b
            .hourly("us-east-1", "g5.xlarge", Market::OnDemand, true)
            .unwrap();
        assert!(close(h.usd, row.ec2_usd_per_hour + row.emr_usd_per_hour));
        // spot asked with no spot price: on-demand, and said
        let s = b
            .hourly("us-east-1", "g5.xlarge", Market::Spot, true)
            .unwrap();
        assert_eq!(s.market, Market::OnDemand);
        assert!(close(s.usd, h.usd));
        // EMR on EKS pays no EMR fee
        let k = b
            .hourly("us-east-1", "g5.xlarge", Market::OnDemand, false)
            .unwrap();
        assert!(close(k.usd, row.ec2_usd_per_hour));
        assert!(
            b.hourly("mars-1", "g5.xlarge", Market::OnDemand, true)
                .is_none()
        );
    }

    #[test]
    fn terms_discount_spot_and_uplift() {
        let dir = tempfile::tempdir().unwrap();
        let p = file(
            &dir,
            "mine.csv",
            "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour,discount_pct\n\
             us-east-1,g5.xlarge,1.0,0.25,0.40,\n\
             us-east-1,m5d.xlarge,0.2,0.05,,30\n",
        );
        let t = Terms {
            file: Some(p),
            market: Market::Spot,
            discount_pct: 20.0,
            emr_uplift_pct: Some(10.0),
        };
        let b = PriceBook::load(&t).unwrap();
        assert!(!b.is_list());
        assert!(
            b.label.contains("mine.csv")
                && b.label.contains("spot")
                && b.label.contains("20% off")
                && b.label.contains("EMR fee 10%"),
            "{}",
            b.label
        );
        // spot: the file's spot price (not discounted) + 10 % of the on-demand list price
        let g = b
            .hourly("us-east-1", "g5.xlarge", Market::Spot, true)
            .unwrap();
        assert_eq!(g.market, Market::Spot);
        assert!(close(g.usd, 0.40 + 0.10), "{g:?}");
        // on-demand: 20 % off EC2; the fee is not discounted
        let g = b
            .hourly("us-east-1", "g5.xlarge", Market::OnDemand, true)
            .unwrap();
        assert!(close(g.usd, 0.80 + 0.10), "{g:?}");
        // the row's own discount (30 %) wins; no spot price: on-demand
        let m = b
            .hourly("us-east-1", "m5d.xlarge", Market::Spot, true)
            .unwrap();
        assert_eq!(m.market, Market::OnDemand);
        assert!(close(m.usd, 0.14 + 0.02), "{m:?}");
        // the catalog's other types keep the list price, with the terms
        let l = b.row("us-east-1", "g6.4xlarge").unwrap();
        let h = b
            .hourly("us-east-1", "g6.4xlarge", Market::OnDemand, true)
            .unwrap();
        assert!(close(
            h.usd,
            l.ec2_usd_per_hour * 0.8 + l.ec2_usd_per_hour * 0.1
        ));
    }

    #[test]
    fn bad_files_name_the_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,cheap,0\n",
                &["bad.csv:2", "ec2_usd_per_hour", "\"cheap\""][..],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,1,-0.2\n",
                &["bad.csv:2", "emr_usd_per_hour", "-0.2"],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour,discount_pct\n\nus-east-1,g5.xlarge,1,0.2,120\n",
                &["bad.csv:3", "discount_pct", "0 to 95"],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_usd_per_hour\nus-east-1,g5.xlarge,1,0.2,NaN\n",
                &["bad.csv:2", "spot_usd_per_hour"],
            ),
            (
                "region,instance,ec2_usd_per_hour\nus-east-1,g5.xlarge,1\n",
                &["bad.csv", "missing column \"emr_usd_per_hour\""],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour,spot_price\n",
                &["bad.csv", "unknown column \"spot_price\""],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5,1,0.2\n",
                &["bad.csv:2", "instance", "\"g5\""],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\n,g5.xlarge,1,0.2\n",
                &["bad.csv:2", "region"],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,1,0.2,9\n",
                &["bad.csv:2"],
            ),
            (
                "region,instance,ec2_usd_per_hour,emr_usd_per_hour\nus-east-1,g5.xlarge,1,0.2\nus-east-1,g5.xlarge,2,0.2\n",
                &["bad.csv:3", "listed twice (line 2)"],
            ),
        ];
        for (text, want) in cases {
            let p = file(&dir, "bad.csv", text);
            let t = Terms::list().with_file(Some(&p));
            let e = PriceBook::load(&t)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            for w in want {
                assert!(e.contains(w), "{text:?}: {e:?} lacks {w:?}");
            }
        }
        let t = Terms::list().with_file(Some(&dir.path().join("none.csv")));
        let e = PriceBook::load(&t).err().unwrap().to_string();
        assert!(e.contains("none.csv") && e.contains("cannot read"), "{e}");
    }
}
