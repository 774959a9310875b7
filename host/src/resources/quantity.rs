//! Kubernetes quantities (`100m`, `64Mi`, `1e3`) in thousandths of their unit.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Why a quantity could not be read; each names the text as written in the spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Only a suffix (`Mi`), or nothing at all.
    #[error("quantity {text:?} has no number")]
    NoNumber {
        /// The quantity as written.
        text: String,
    },
    /// An `e`/`E` suffix not followed by a whole number (`1e`, `1ex`).
    #[error("quantity {text:?} has an invalid exponent")]
    InvalidExponent {
        /// The quantity as written.
        text: String,
    },
    /// A suffix Kubernetes does not know (`12x`); the binary ones are `Ki`..`Ei`.
    #[error("quantity {text:?} has unknown suffix {suffix:?}")]
    UnknownSuffix {
        /// The quantity as written.
        text: String,
        /// The part after the number.
        suffix: String,
    },
    /// The number part is not digits with at most one point (`1.2.3`, `+-1`).
    #[error("quantity {text:?} has an invalid number")]
    InvalidNumber {
        /// The quantity as written.
        text: String,
    },
    /// The value in thousandths does not fit in 128 bits.
    #[error("quantity {text:?} is too large")]
    TooLarge {
        /// The quantity as written.
        text: String,
    },
}

/// Parses a Kubernetes quantity (`100m`, `64Mi`, `1.5G`, `1e3`) into thousandths of a unit,
/// so CPU comes out in millicores and memory in thousandths of bytes.
pub fn parse_milli(text: &str) -> Result<i128, QuantityError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if number.is_empty() {
        return Err(QuantityError::NoNumber { text: text.into() });
    }
    let (mantissa_scale, exponent): (i128, i32) = match suffix {
        "" => (1, 0),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        s if s.starts_with(['e', 'E']) => (
            1,
            s[1..]
                .parse()
                .map_err(|_| QuantityError::InvalidExponent { text: text.into() })?,
        ),
        s => {
            return Err(QuantityError::UnknownSuffix {
                text: text.into(),
                suffix: s.into(),
            })
        }
    };
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.trim_start_matches('+')),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .chars()
            .chain(fraction.chars())
            .all(|c| c.is_ascii_digit())
    {
        return Err(QuantityError::InvalidNumber { text: text.into() });
    }
    // value = (whole.fraction) * scale * 10^exponent * 1000, rounded up as Kubernetes rounds.
    let too_large = || QuantityError::TooLarge { text: text.into() };
    let digits: String = format!("{whole}{fraction}");
    let mut value: i128 = digits
        .parse::<i128>()
        .map_err(|_| too_large())?
        .checked_mul(mantissa_scale)
        .ok_or_else(too_large)?;
    // In i64, so no exponent overflows; bounded, so no exponent costs more than ~40 steps: an
    // i128 holds at most 10^38, and dividing by more than 10^40 leaves what rounds up to 1.
    let mut power = i64::from(exponent) + 3 - fraction.len() as i64;
    if value == 0 {
        return Ok(0);
    }
    if power > 38 {
        return Err(too_large());
    }
    if power < -40 {
        return Ok(if negative { -1 } else { 1 });
    }
    while power > 0 {
        value = value.checked_mul(10).ok_or_else(too_large)?;
        power -= 1;
    }
    while power < 0 {
        let rounded_up = value % 10 != 0;
        value = value / 10 + i128::from(rounded_up);
        power += 1;
    }
    Ok(if negative { -value } else { value })
}

/// CPU in millicores.
pub fn cpu_millis(quantity: &Quantity) -> Result<i64, QuantityError> {
    let millis = parse_milli(&quantity.0)?;
    i64::try_from(millis).map_err(|_| QuantityError::TooLarge {
        text: quantity.0.clone(),
    })
}

/// Memory (or storage) in bytes, rounded up.
pub fn bytes(quantity: &Quantity) -> Result<i64, QuantityError> {
    let millis = parse_milli(&quantity.0)?;
    i64::try_from(millis.saturating_add(999) / 1000).map_err(|_| QuantityError::TooLarge {
        text: quantity.0.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quantities_like_kubernetes() {
        assert_eq!(parse_milli("100m"), Ok(100));
        assert_eq!(parse_milli("1"), Ok(1000));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("64Mi"), Ok(64 * 1024 * 1024 * 1000));
        assert_eq!(parse_milli("1G"), Ok(1_000_000_000_000));
        assert_eq!(parse_milli("1e3"), Ok(1_000_000));
        assert_eq!(parse_milli("1n"), Ok(1), "rounds up");
        assert_eq!(
            parse_milli("12x").map_err(|e| e.to_string()),
            Err(r#"quantity "12x" has unknown suffix "x""#.to_string())
        );
        assert_eq!(
            parse_milli("Mi"),
            Err(QuantityError::NoNumber { text: "Mi".into() })
        );
        assert_eq!(bytes(&Quantity("16Mi".into())), Ok(16 << 20));
    }

    #[test]
    fn errors_read_as_before() {
        let text = |q: &str| parse_milli(q).unwrap_err().to_string();
        assert_eq!(text("Mi"), r#"quantity "Mi" has no number"#);
        assert_eq!(text("1ex"), r#"quantity "1ex" has an invalid exponent"#);
        // Absurd exponents answer at once, never wrap round.
        for absurd in [
            "1e2147483647",
            "1e-2147483648",
            "0e2147483647",
            "9E2147483647",
        ] {
            let started = std::time::Instant::now();
            let result = parse_milli(absurd);
            assert!(
                started.elapsed() < std::time::Duration::from_millis(5),
                "{absurd}"
            );
            assert_ne!(result, Ok(1000), "{absurd}");
        }
        assert!(parse_milli("1e2147483647").is_err());
        assert_eq!(parse_milli("0e2147483647"), Ok(0));
        assert_eq!(parse_milli("1e-2147483648"), Ok(1));
        assert!(parse_milli(&"9".repeat(10_000)).is_err());
        assert!(cpu_millis(&Quantity("1e30".into())).is_err());
        assert_eq!(text("1.2.3"), r#"quantity "1.2.3" has an invalid number"#);
        assert_eq!(
            text("1e100"),
            r#"quantity "1e100" is too large"#,
            "overflows i128"
        );
    }
}
