//! Durations as Kubernetes config files write them (Go's `time.Duration` strings: `20s`,
//! `1m30s`, `100ms`), so a KubeletConfiguration copied from a real node parses unchanged.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// Why a duration string was refused; each names the text, so a config error can be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Blank text: Go requires at least `0`.
    #[error("empty duration")]
    Empty,
    /// A number with no unit after it (`10`); only `0` may go without one.
    #[error("duration {text:?} is missing a unit (e.g. 10s, 1m, 100ms)")]
    MissingUnit {
        /// The duration as written.
        text: String,
    },
    /// A unit with no number before it (`s`, `ms`).
    #[error("duration {text:?} has a unit without a number")]
    NoNumber {
        /// The duration as written.
        text: String,
    },
    /// Digits and points that do not make a number (`1.2.3s`).
    #[error("duration {text:?} has an invalid number")]
    InvalidNumber {
        /// The duration as written.
        text: String,
    },
    /// A unit Go does not know (`10x`, `1d`); Go's largest is `h`.
    #[error("duration {text:?} has unknown unit {unit:?}")]
    UnknownUnit {
        /// The duration as written.
        text: String,
        /// The unit as written.
        unit: String,
    },
}

/// Parses a Go duration string. Go accepts fractions (`1.5s`) and unit sequences (`1h2m`).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| DurationError::MissingUnit { text: text.into() })?;
        if number_len == 0 {
            return Err(DurationError::NoNumber { text: text.into() });
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| DurationError::InvalidNumber { text: text.into() })?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            unit => {
                return Err(DurationError::UnknownUnit {
                    text: text.into(),
                    unit: unit.into(),
                })
            }
        };
        total += number * seconds_per_unit;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

/// Formats like Go's `Duration.String()` for whole seconds and milliseconds, for logs and `/configz`.
pub fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        return format!("{millis}ms");
    }
    let secs = duration.as_secs();
    match (secs / 3600, (secs % 3600) / 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// serde adapter: `#[serde(with = "duration::go")]`.
pub mod go {
    use super::*;

    /// Reads a Go duration string such as `"20s"`; the error names the text and what is wrong.
    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(de)?;
        parse(&text).map_err(serde::de::Error::custom)
    }

    /// Writes the duration back as Go would, so a config round-trips through `/configz`.
    pub fn serialize<S: Serializer>(value: &Duration, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(&format(*value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert!(parse("10").is_err());
        assert!(parse("10x").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for text in ["20s", "1m30s", "250ms", "1h0m0s"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
    }

    #[test]
    fn errors_read_as_before() {
        let text = |d: &str| parse(d).unwrap_err().to_string();
        assert_eq!(text(" "), "empty duration");
        assert_eq!(
            text("10"),
            r#"duration "10" is missing a unit (e.g. 10s, 1m, 100ms)"#
        );
        assert_eq!(text("s"), r#"duration "s" has a unit without a number"#);
        assert_eq!(text("1.2.3s"), r#"duration "1.2.3s" has an invalid number"#);
        assert_eq!(text("10x"), r#"duration "10x" has unknown unit "x""#);
    }
}
