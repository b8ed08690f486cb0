//! Figures from repeated runs: median with min and max.

use std::time::Duration;

/// The median, min and max of a set of samples, in the sample's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Median (the upper middle for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
}

impl Stat {
    /// The statistics of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Stat> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Stat {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        })
    }

    /// One exact value (a count, not a timing).
    pub fn exact(value: f64) -> Stat {
        Stat {
            median: value,
            min: value,
            max: value,
            n: 1,
        }
    }

    /// The statistics of durations, in milliseconds.
    pub fn millis(samples: &[Duration]) -> Option<Stat> {
        let ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        Stat::of(&ms)
    }

    /// The `p`-th percentile (0..=1) of `samples`, nearest rank.
    pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
        let mut v: Vec<f64> = samples.to_vec();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let i = ((v.len() as f64 - 1.0) * p).round() as usize;
        Some(v[i.min(v.len() - 1)])
    }
}

/// `x` with `decimals` decimals and thousands separators in the integer part.
pub fn num(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    let s = format!("{:.decimals$}", x.abs());
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let sign = if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    let grouped = sayri_core::domain::observation::thousands(int.parse().unwrap_or(0));
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max_and_formatting() {
        let s = Stat::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.0, 1.0, 10.0, 4));
        assert_eq!(Stat::percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), Some(3.0));
        assert_eq!(num(1234567.891, 1), "1,234,567.9");
        assert_eq!(num(12.0, 0), "12");
        assert_eq!(num(-0.11, 2), "-0.11");
    }
}
