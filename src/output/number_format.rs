//! Number and string formatting of the upstream query output (C++ iostream defaults).
//!
//! * [`append_g6`]: a double as `printf("%g")` prints it (6 significant digits, trailing zeros
//!   removed, exponent form below `1e-4` or from `1e6` on), correctly rounded (ties to even on
//!   the exact binary value, like glibc).
//! * [`append_json_string`]: a quoted string escaping only `"` `\` `\n` `\r` `\t`, as upstream.
//!
//! Both append to a `Vec<u8>` and allocate nothing else.

use std::io::Write as _;

/// Significant digits of `%g` (its default precision).
const SIGNIFICANT_DIGITS: i32 = 6;

/// `10^SIGNIFICANT_DIGITS`: one past the largest 6-digit mantissa.
const MANTISSA_LIMIT: f64 = 1e6;

/// `10^(SIGNIFICANT_DIGITS - 1)`: the smallest 6-digit mantissa.
const MANTISSA_FLOOR: f64 = 1e5;

/// Powers of ten that are exact in an `f64`.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// How close to `.5` a scaled mantissa may come before the fast path defers to exact
/// formatting. The fast path's error is below `1e6 · 2^-53 ≈ 1.1e-10`, far inside this.
const TIE_GUARD: f64 = 1e-6;

/// Appends `value` formatted as C's `printf("%g", value)`.
pub fn append_g6(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(if value.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if value.is_sign_negative() {
        out.push(b'-');
    }
    let magnitude = value.abs();
    if magnitude.is_infinite() {
        out.extend_from_slice(b"inf");
        return;
    }
    if magnitude == 0.0 {
        out.push(b'0');
        return;
    }
    let (mantissa, exponent) = round_to_six_digits(magnitude);
    let mut digits = [0_u8; 6];
    let mut rest = mantissa;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + u8::try_from(rest % 10).expect("a decimal digit fits in u8");
        rest /= 10;
    }
    let significant = 6 - digits.iter().rev().take_while(|&&d| d == b'0').count();
    if (-4..SIGNIFICANT_DIGITS).contains(&exponent) {
        if exponent >= 0 {
            let integer_digits = usize::try_from(exponent).expect("exponent is in 0..6") + 1;
            out.extend_from_slice(&digits[..integer_digits]);
            if significant > integer_digits {
                out.push(b'.');
                out.extend_from_slice(&digits[integer_digits..significant]);
            }
        } else {
            out.extend_from_slice(b"0.");
            for _ in exponent + 1..0 {
                out.push(b'0');
            }
            out.extend_from_slice(&digits[..significant]);
        }
    } else {
        out.push(digits[0]);
        if significant > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..significant]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let exponent = exponent.unsigned_abs();
        if exponent < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(exponent).as_bytes());
    }
}

/// `value` formatted as `printf("%g", value)`.
#[must_use]
pub fn format_g6(value: f64) -> String {
    let mut out = Vec::with_capacity(16);
    append_g6(&mut out, value);
    String::from_utf8(out).expect("%g output is ASCII")
}

/// Rounds a positive finite `value` to six significant digits: `(mantissa, exponent)` with
/// `mantissa` in `100000..=999999` and `value ≈ mantissa · 10^(exponent − 5)`.
fn round_to_six_digits(value: f64) -> (u32, i32) {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "log10 of a finite f64 is within ±324"
    )]
    let mut exponent = value.log10().floor() as i32;
    for _ in 0..3 {
        let Some(scaled) = scale_exactly(value, SIGNIFICANT_DIGITS - 1 - exponent) else {
            break;
        };
        if scaled < MANTISSA_FLOOR {
            exponent -= 1;
            continue;
        }
        if scaled >= MANTISSA_LIMIT {
            exponent += 1;
            continue;
        }
        if (scaled - scaled.floor() - 0.5).abs() < TIE_GUARD {
            break;
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "scaled is in [1e5, 1e6)"
        )]
        let mantissa = scaled.round() as u32;
        return if mantissa == 1_000_000 {
            (100_000, exponent + 1)
        } else {
            (mantissa, exponent)
        };
    }
    round_to_six_digits_exact(value)
}

/// `value · 10^power` with one rounding, or `None` if `10^|power|` is not exact.
fn scale_exactly(value: f64, power: i32) -> Option<f64> {
    let factor = EXACT_POWERS_OF_TEN.get(usize::try_from(power.unsigned_abs()).ok()?)?;
    Some(if power >= 0 {
        value * factor
    } else {
        value / factor
    })
}

/// The exact path: std's correctly rounded `{:.5e}` (ties to even on the binary value).
fn round_to_six_digits_exact(value: f64) -> (u32, i32) {
    let mut buffer = [0_u8; 32];
    let mut cursor = &mut buffer[..];
    write!(cursor, "{value:.5e}").expect("a formatted f64 fits in 32 bytes");
    let written = 32 - cursor.len();
    let text = std::str::from_utf8(&buffer[..written]).expect("formatted f64 is ASCII");
    let (mantissa_text, exponent_text) = text.split_once('e').expect("{:e} output has an 'e'");
    let mantissa = mantissa_text
        .bytes()
        .filter(u8::is_ascii_digit)
        .fold(0_u32, |m, d| m * 10 + u32::from(d - b'0'));
    let exponent = exponent_text.parse().expect("{:e} exponent is an integer");
    (mantissa, exponent)
}

/// Appends `value` as a JSON string the way upstream writes it: `"` `\` `\n` `\r` `\t` are
/// escaped, every other byte (control characters included) is copied as is.
pub fn append_json_string(out: &mut Vec<u8>, value: &str) {
    out.push(b'"');
    let mut rest = value.as_bytes();
    while let Some(at) = rest
        .iter()
        .position(|&b| matches!(b, b'"' | b'\\' | b'\n' | b'\r' | b'\t'))
    {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(match rest[at] {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            _ => b"\\t",
        });
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected strings are glibc `printf("%g")` outputs.
    #[test]
    fn matches_printf_g() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (2.0 / 3.0, "0.666667"),
            (2.0 * 16384.0 / 1_073_741_824.0, "3.05176e-05"),
            (-1.0, "-1"),
            (1e6, "1e+06"),
            (100_000.0, "100000"),
            (0.1, "0.1"),
            (123_456.7, "123457"),
            (1.5e-7, "1.5e-07"),
            (0.999_999_5, "1"),
            (0.999_999_4, "0.999999"),
            (999_999.5, "1e+06"),
            (999_998.5, "999998"),
            (1_234_565.0, "1.23456e+06"),
            (1_234_575.0, "1.23458e+06"),
            (0.125, "0.125"),
            (0.0001, "0.0001"),
            (0.000_099_999_99, "0.0001"),
            (0.000_099_999_4, "9.99994e-05"),
            (1e-5, "1e-05"),
            (1e100, "1e+100"),
            (1.797_693_134_862_315_7e308, "1.79769e+308"),
            (5e-324, "4.94066e-324"),
            (12.5, "12.5"),
            (3.0, "3"),
            (1024.0, "1024"),
            (16.0 / 38.0, "0.421053"),
            (20.0 / 38.0, "0.526316"),
            (652_288.0 / 6_604_327.0, "0.0987668"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-2.5e-5, "-2.5e-05"),
            (0.000_123_456_5, "0.000123457"),
            (123_456_789_012.0, "1.23457e+11"),
        ];
        for &(value, expected) in cases {
            assert_eq!(format_g6(value), expected, "value {value:e}");
        }
    }

    #[test]
    fn fast_path_agrees_with_exact_path() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = f64::from_bits(state >> 2);
            if !value.is_finite() || value == 0.0 {
                continue;
            }
            assert_eq!(
                round_to_six_digits(value),
                round_to_six_digits_exact(value),
                "{value:e}"
            );
            let rate = (state % 1_000_003) as f64 / ((state >> 32) % 999_983 + 1) as f64;
            if rate > 0.0 {
                assert_eq!(
                    round_to_six_digits(rate),
                    round_to_six_digits_exact(rate),
                    "{rate:e}"
                );
            }
        }
    }

    #[test]
    fn json_strings_escape_only_five_characters() {
        let mut out = Vec::new();
        append_json_string(&mut out, "a\"b\\c\nd\re\tf\u{1}g/é");
        assert_eq!(out, b"\"a\\\"b\\\\c\\nd\\re\\tf\x01g/\xc3\xa9\"");
    }
}
