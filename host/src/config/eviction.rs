//! Eviction thresholds from the KubeletConfiguration, parsed as upstream parses them
//! (`pkg/kubelet/eviction/api`, `ParseThresholdConfig`): `signal: "100Mi"` or `"10%"`, hard
//! and soft maps, soft grace periods and minimum reclaims.

use super::duration;
use super::kubelet::KubeletConfiguration;
use crate::resources::QuantityError;
use std::collections::BTreeMap;
use std::time::Duration;
use wasmlet_policy_default::Signal;

/// A threshold's quantity: absolute (bytes, inodes or PIDs) or a share of the capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThresholdValue {
    /// An absolute amount in the signal's unit.
    Quantity(i64),
    /// A fraction of capacity in `[0, 1]`.
    Percentage(f64),
}

impl ThresholdValue {
    /// The absolute amount this value stands for on a resource of `capacity`.
    pub fn resolve(self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q,
            ThresholdValue::Percentage(p) => (capacity as f64 * p) as i64,
        }
    }
}

/// One eviction threshold: met when the signal's available amount drops below `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The resource whose availability is watched.
    pub signal: Signal,
    /// The availability below which the threshold is met.
    pub value: ThresholdValue,
    /// Zero for a hard threshold; how long a soft one must hold before it evicts.
    pub grace_period: Duration,
    /// Headroom the signal must regain above `value` before the threshold is resolved.
    pub min_reclaim: Option<ThresholdValue>,
}

impl Threshold {
    /// Hard thresholds evict at once, with the minimal pod grace period.
    pub fn is_hard(&self) -> bool {
        self.grace_period.is_zero()
    }
}

/// The signals wasmlet measures, by their upstream names.
const SIGNALS: [Signal; 6] = [
    Signal::MemoryAvailable,
    Signal::NodefsAvailable,
    Signal::NodefsInodesFree,
    Signal::ImagefsAvailable,
    Signal::ImagefsInodesFree,
    Signal::PidAvailable,
];

/// Upstream's Linux defaults for `evictionHard` (`defaults_linux.go`).
pub const DEFAULT_HARD: [(&str, &str); 4] = [
    ("memory.available", "100Mi"),
    ("nodefs.available", "10%"),
    ("nodefs.inodesFree", "5%"),
    ("imagefs.available", "15%"),
];

fn signal(field: &str, name: &str) -> Result<Signal, (String, String)> {
    SIGNALS
        .into_iter()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = SIGNALS.iter().map(|s| s.as_str()).collect();
            (
                format!("{field}.{name}"),
                format!("unknown eviction signal; known: {}", known.join(", ")),
            )
        })
}

/// Why a threshold value (`"10%"`, `"100Mi"`) was refused; the config error names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdValueError {
    /// A `%` suffix after something that is not a number.
    #[error("{text:?} is not a percentage")]
    NotAPercentage {
        /// The value as written.
        text: String,
    },
    /// A percentage below 0% or above 100%, which no capacity can meet.
    #[error("{text:?} must be between 0% and 100%")]
    PercentageOutOfRange {
        /// The value as written.
        text: String,
    },
    /// Neither a percentage nor a valid quantity.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// A negative quantity, which would never be met.
    #[error("{text:?} must not be negative")]
    Negative {
        /// The value as written.
        text: String,
    },
    /// A quantity past what 64-bit byte counts hold.
    #[error("{text:?} is too large")]
    TooLarge {
        /// The value as written.
        text: String,
    },
}

/// Parses `"10%"` or a quantity (`"100Mi"`, `"5000"`).
pub fn parse_value(text: &str) -> Result<ThresholdValue, ThresholdValueError> {
    let text = text.trim();
    if let Some(number) = text.strip_suffix('%') {
        let percent: f64 = number
            .trim()
            .parse()
            .map_err(|_| ThresholdValueError::NotAPercentage { text: text.into() })?;
        if !(0.0..=100.0).contains(&percent) {
            return Err(ThresholdValueError::PercentageOutOfRange { text: text.into() });
        }
        return Ok(ThresholdValue::Percentage(percent / 100.0));
    }
    let milli = crate::resources::parse_milli(text)?;
    if milli < 0 {
        return Err(ThresholdValueError::Negative { text: text.into() });
    }
    let value = i64::try_from(milli.saturating_add(999) / 1000)
        .map_err(|_| ThresholdValueError::TooLarge { text: text.into() })?;
    Ok(ThresholdValue::Quantity(value))
}

fn value_of(field: &str, name: &str, text: &str) -> Result<ThresholdValue, (String, String)> {
    parse_value(text).map_err(|why| (format!("{field}.{name}"), why.to_string()))
}

/// Every threshold the configuration asks for, hard ones first; the error names the field.
pub fn thresholds(config: &KubeletConfiguration) -> Result<Vec<Threshold>, (String, String)> {
    let defaults: BTreeMap<String, String> = DEFAULT_HARD
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let hard = config.eviction_hard.as_ref().unwrap_or(&defaults);
    let mut reclaim = std::collections::HashMap::new();
    for (name, text) in &config.eviction_minimum_reclaim {
        let s = signal("evictionMinimumReclaim", name)?;
        reclaim.insert(s, value_of("evictionMinimumReclaim", name, text)?);
    }
    let mut out = Vec::new();
    for (name, text) in hard {
        let s = signal("evictionHard", name)?;
        out.push(Threshold {
            signal: s,
            value: value_of("evictionHard", name, text)?,
            grace_period: Duration::ZERO,
            min_reclaim: reclaim.get(&s).copied(),
        });
    }
    for (name, text) in &config.eviction_soft {
        let s = signal("evictionSoft", name)?;
        let grace = config.eviction_soft_grace_period.get(name).ok_or_else(|| {
            (
                format!("evictionSoftGracePeriod.{name}"),
                "grace period must be specified for the soft eviction threshold".to_string(),
            )
        })?;
        let grace = duration::parse(grace)
            .map_err(|why| (format!("evictionSoftGracePeriod.{name}"), why.to_string()))?;
        if grace.is_zero() {
            return Err((
                format!("evictionSoftGracePeriod.{name}"),
                "must be greater than 0 (use evictionHard for an immediate threshold)".into(),
            ));
        }
        out.push(Threshold {
            signal: s,
            value: value_of("evictionSoft", name, text)?,
            grace_period: grace,
            min_reclaim: reclaim.get(&s).copied(),
        });
    }
    for name in config.eviction_soft_grace_period.keys() {
        signal("evictionSoftGracePeriod", name)?;
        if !config.eviction_soft.contains_key(name) {
            return Err((
                format!("evictionSoftGracePeriod.{name}"),
                "has no evictionSoft threshold".into(),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> KubeletConfiguration {
        wasmlet_plugin_host::yaml::from_str(yaml).expect("test config parses")
    }

    #[test]
    fn defaults_are_upstreams_linux_hard_thresholds() {
        let t = thresholds(&KubeletConfiguration::default()).expect("valid");
        assert_eq!(t.len(), 4);
        let memory = t
            .iter()
            .find(|t| t.signal == Signal::MemoryAvailable)
            .expect("memory threshold");
        assert_eq!(memory.value, ThresholdValue::Quantity(100 << 20));
        assert!(memory.is_hard());
        let imagefs = t
            .iter()
            .find(|t| t.signal == Signal::ImagefsAvailable)
            .expect("imagefs threshold");
        assert_eq!(imagefs.value, ThresholdValue::Percentage(0.15));
        assert_eq!(imagefs.value.resolve(1000), 150);
    }

    #[test]
    fn setting_one_hard_threshold_drops_the_other_defaults() {
        let t = thresholds(&config("evictionHard: {memory.available: 1Gi}\n")).expect("valid");
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].value, ThresholdValue::Quantity(1 << 30));
    }

    #[test]
    fn soft_thresholds_need_a_grace_period() {
        let err = thresholds(&config("evictionSoft: {memory.available: 2Gi}\n")).unwrap_err();
        assert_eq!(err.0, "evictionSoftGracePeriod.memory.available");
        let t = thresholds(&config(
            "evictionHard: {}\nevictionSoft: {memory.available: 2Gi}\nevictionSoftGracePeriod: {memory.available: 30s}\nevictionMinimumReclaim: {memory.available: 10%}\n",
        ))
        .expect("valid");
        assert_eq!(t[0].grace_period, Duration::from_secs(30));
        assert_eq!(t[0].min_reclaim, Some(ThresholdValue::Percentage(0.10)));
    }

    #[test]
    fn bad_signals_and_values_name_the_field() {
        let err = thresholds(&config("evictionHard: {memory.free: 1Gi}\n")).unwrap_err();
        assert_eq!(err.0, "evictionHard.memory.free");
        let err = thresholds(&config("evictionHard: {nodefs.available: 120%}\n")).unwrap_err();
        assert_eq!(err.0, "evictionHard.nodefs.available");
        let err = thresholds(&config("evictionHard: {memory.available: lots}\n")).unwrap_err();
        assert!(err.1.contains("lots"), "{}", err.1);
    }

    #[test]
    fn value_errors_read_as_before() {
        let text = |v: &str| parse_value(v).unwrap_err().to_string();
        assert_eq!(text("x%"), r#""x%" is not a percentage"#);
        assert_eq!(text("120%"), r#""120%" must be between 0% and 100%"#);
        assert_eq!(text("-1Mi"), r#""-1Mi" must not be negative"#);
        assert_eq!(
            text("10E"),
            r#""10E" is too large"#,
            "more bytes than i64 holds"
        );
        assert_eq!(text("lots"), r#"quantity "lots" has no number"#);
    }
}
