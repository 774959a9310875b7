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
    /// The value in thousandths does not fit in 128 bits, or is so large (past 10^37
    /// thousandths) that digits beyond an i128's would change it.
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
    // An unquoted number past a float's range (`cpu: 1e400`) reaches the quantity as the
    // float it overflowed to.
    if matches!(text, "inf" | "+inf" | "-inf") {
        return Err(QuantityError::TooLarge { text: text.into() });
    }
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
    // Zeros that add nothing are dropped first, so `1.000…0` is 1 however many zeros it has.
    let too_large = || QuantityError::TooLarge { text: text.into() };
    let fraction = fraction.trim_end_matches('0');
    let digits = format!("{whole}{fraction}");
    let significant = digits.trim_start_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    // In i64, so no exponent overflows; bounded, so no exponent costs more than ~40 steps: an
    // i128 holds at most 10^38, and dividing by more than 10^40 leaves what rounds up to 1.
    let mut power = i64::from(exponent) + 3 - fraction.len() as i64;
    // The digits an i128 holds once scaled are kept; the rest can only round the result up
    // (a value past them, once multiplied back, is beyond any amount wasmlet reads).
    let headroom = match mantissa_scale {
        1 => 0,
        scale => scale.ilog10() as usize + 1,
    };
    let room = 38 - headroom;
    let (kept, dropped) = significant.split_at(significant.len().min(room));
    let inexact = dropped.bytes().any(|b| b != b'0');
    power += dropped.len() as i64;
    if power > 38 || (inexact && power > 0) {
        return Err(too_large());
    }
    if power < -40 {
        return Ok(if negative { -1 } else { 1 });
    }
    let mut value: i128 = kept
        .parse::<i128>()
        .map_err(|_| too_large())?
        .checked_mul(mantissa_scale)
        .ok_or_else(too_large)?;
    // Rounded up once, from every digit divided away and every digit dropped.
    let mut round_up = inexact;
    while power > 0 {
        value = value.checked_mul(10).ok_or_else(too_large)?;
        power -= 1;
    }
    while power < 0 {
        round_up |= value % 10 != 0;
        value /= 10;
        power += 1;
    }
    if round_up {
        value = value.checked_add(1).ok_or_else(too_large)?;
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
        // A YAML number past a float's range arrives as the infinity it overflowed to.
        assert_eq!(text("inf"), r#"quantity "inf" is too large"#);
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

    #[test]
    fn absurd_quantities_answer_within_a_millisecond() {
        let long_fraction = format!("1.{}", "0".repeat(10_000));
        let long_zeros = format!("{}1", "0".repeat(10_000));
        let tiny = format!("0.{}1", "0".repeat(10_000));
        let nines = "9".repeat(10_000);
        let many_points = ".".repeat(10_000);
        let exponent_digits = format!("1e{}", "9".repeat(10_000));
        let cases = [
            long_fraction.as_str(),
            &long_zeros,
            &tiny,
            &nines,
            &many_points,
            &exponent_digits,
            "1e2147483647",
            "-1e2147483647",
            "1e-2147483648",
            "170141183460469231731687303715884105727",
        ];
        for text in cases {
            let started = std::time::Instant::now();
            let result = parse_milli(text);
            let took = started.elapsed();
            assert!(
                took < std::time::Duration::from_millis(1),
                "{:.20}: {took:?}",
                text
            );
            if let Err(error) = result {
                assert!(error.to_string().starts_with("quantity "), "{error}");
            }
        }
        assert_eq!(parse_milli(&long_fraction), Ok(1000), "zeros add nothing");
        assert_eq!(parse_milli(&long_zeros), Ok(1000));
        assert_eq!(parse_milli(&tiny), Ok(1), "rounds up");
        assert!(parse_milli(&nines).is_err());
        assert!(parse_milli(&many_points).is_err());
        assert!(parse_milli(&exponent_digits).is_err());
        assert_eq!(parse_milli("0.000"), Ok(0));
        assert_eq!(parse_milli("-0.5"), Ok(-500));
    }

    /// The fastest of three runs, so a busy machine's scheduling does not count.
    fn fastest_parse(text: &str) -> (Result<i128, QuantityError>, std::time::Duration) {
        let mut best = std::time::Duration::MAX;
        let mut result = Err(QuantityError::NoNumber {
            text: String::new(),
        });
        for _ in 0..3 {
            let started = std::time::Instant::now();
            result = parse_milli(text);
            best = best.min(started.elapsed());
        }
        (result, best)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, failure_persistence: None, ..Default::default() })]

        #[test]
        fn any_text_parses_or_is_refused_at_once(text in "[-+0-9.eEKMGTPimnuk ]{0,300}|.{0,100}") {
            let (result, took) = fastest_parse(&text);
            proptest::prop_assert!(took < std::time::Duration::from_millis(1), "{took:?}");
            if let Err(error) = result {
                proptest::prop_assert!(error.to_string().starts_with("quantity "), "{}", error);
            }
        }

        #[test]
        fn whole_numbers_read_exactly(n in -1_000_000_000_000_000i64..1_000_000_000_000_000) {
            let n = i128::from(n);
            proptest::prop_assert_eq!(parse_milli(&n.to_string()), Ok(n * 1000));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}m")), Ok(n));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}Ki")), Ok(n * 1024 * 1000));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}k")), Ok(n * 1_000_000));
            proptest::prop_assert_eq!(parse_milli(&format!("{n}e0")), Ok(n * 1000));
        }

        #[test]
        fn decimals_read_exactly(whole in 0u32..1_000_000, milli in 0u32..1000, zeros in 0usize..50) {
            let text = format!("{whole}.{milli:03}{}", "0".repeat(zeros));
            proptest::prop_assert_eq!(parse_milli(&text), Ok(i128::from(whole) * 1000 + i128::from(milli)));
        }
    }
}
