//! Strict, path-aware reading of JSON values with upstream's (rapidjson helper) typing rules.
//!
//! A missing key is `Ok(None)` (the caller applies the default); a present key of the wrong
//! type is a [`ConfigError::WrongType`] naming the field path (`instances[1].block_size`).
//! `null` is a wrong type like any other. Unsigned fields take only non-negative integers,
//! `4.0` is not an integer, and a double field takes any number that a `f64` holds exactly.

use serde_json::{Map, Number, Value};

use super::{ConfigError, Result};

/// A JSON object together with its path from the config root (`""` for the root itself).
#[derive(Debug, Clone)]
pub(super) struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

/// A JSON array together with the path of the key that holds it.
#[derive(Debug, Clone)]
pub(super) struct Arr<'a> {
    items: &'a [Value],
    path: String,
}

impl<'a> Obj<'a> {
    /// The config root, which must be a JSON object.
    pub(super) fn root(value: &'a Value) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                path: String::new(),
            }),
            other => Err(wrong_type("config".to_owned(), "a JSON object", other)),
        }
    }

    /// The path of `key` inside this object, e.g. `instances[0].block_size`.
    pub(super) fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// This object's own path (`""` for the root).
    pub(super) fn path(&self) -> &str {
        &self.path
    }

    pub(super) fn string(&self, key: &str) -> Result<Option<&'a str>> {
        self.typed(key, "a string", |v| v.as_str())
    }

    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>> {
        self.typed(key, "a boolean", Value::as_bool)
    }

    /// An unsigned 64-bit field: a non-negative integer.
    pub(super) fn u64(&self, key: &str) -> Result<Option<u64>> {
        self.typed(key, "a non-negative integer", Value::as_u64)
    }

    /// A signed 64-bit field.
    pub(super) fn i64(&self, key: &str) -> Result<Option<i64>> {
        self.typed(key, "a 64-bit integer", Value::as_i64)
    }

    /// A signed 32-bit field. Upstream truncates wider values silently; we reject them.
    pub(super) fn i32(&self, key: &str) -> Result<Option<i32>> {
        self.typed(key, "a 32-bit integer", |v| {
            v.as_i64().and_then(|n| i32::try_from(n).ok())
        })
    }

    pub(super) fn array(&self, key: &str) -> Result<Option<Arr<'a>>> {
        let items = self.typed(key, "an array", |v| v.as_array().map(Vec::as_slice))?;
        Ok(items.map(|items| Arr {
            items,
            path: self.field(key),
        }))
    }

    pub(super) fn object(&self, key: &str) -> Result<Option<Obj<'a>>> {
        let map = self.typed(key, "an object", Value::as_object)?;
        Ok(map.map(|map| Obj {
            map,
            path: self.field(key),
        }))
    }

    fn typed<T>(
        &self,
        key: &str,
        expected: &'static str,
        convert: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<Option<T>> {
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        convert(value)
            .map(Some)
            .ok_or_else(|| wrong_type(self.field(key), expected, value))
    }
}

impl<'a> Arr<'a> {
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The path of element `index`, e.g. `instances[2]`.
    pub(super) fn element(&self, index: usize) -> String {
        format!("{}[{index}]", self.path)
    }

    /// Every element as an object (its path is `key[index]`).
    pub(super) fn objects(&self) -> Result<Vec<Obj<'a>>> {
        self.convert_each("an object", Value::as_object)
            .map(|items| {
                items
                    .into_iter()
                    .map(|(map, path)| Obj { map, path })
                    .collect()
            })
    }

    pub(super) fn strings(&self) -> Result<Vec<&'a str>> {
        self.convert_each("a string", Value::as_str)
            .map(|items| items.into_iter().map(|(s, _)| s).collect())
    }

    /// Every element as a double: any JSON number a `f64` holds exactly.
    pub(super) fn f64s(&self) -> Result<Vec<f64>> {
        self.convert_each("a number", |v| v.as_number().and_then(lossless_f64))
            .map(|items| items.into_iter().map(|(x, _)| x).collect())
    }

    fn convert_each<T>(
        &self,
        expected: &'static str,
        convert: impl Fn(&'a Value) -> Option<T>,
    ) -> Result<Vec<(T, String)>> {
        self.items
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let path = self.element(index);
                match convert(value) {
                    Some(converted) => Ok((converted, path)),
                    None => Err(wrong_type(path, expected, value)),
                }
            })
            .collect()
    }
}

/// `n` as a `f64` if the conversion is exact (rapidjson `IsLosslessDouble`).
///
/// An integer is exact iff its significant bits (highest set bit to lowest set bit) fit the
/// 53-bit mantissa; a number written with a fraction or exponent is a double already.
fn lossless_f64(n: &Number) -> Option<f64> {
    let magnitude = if let Some(u) = n.as_u64() {
        u
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs()
    } else {
        return n.as_f64();
    };
    if magnitude == 0 {
        return Some(0.0);
    }
    let significant_bits = u64::BITS - magnitude.leading_zeros() - magnitude.trailing_zeros();
    (significant_bits <= f64::MANTISSA_DIGITS)
        .then(|| n.as_f64())
        .flatten()
}

fn wrong_type(field: String, expected: &'static str, found: &Value) -> ConfigError {
    ConfigError::WrongType {
        field,
        expected,
        found: describe(found),
    }
}

/// A short rendering of a JSON value for "found …": scalars as JSON, containers by kind.
fn describe(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(value: &Value) -> Obj<'_> {
        Obj::root(value).unwrap()
    }

    #[test]
    fn missing_key_is_none_and_wrong_type_names_the_path() {
        let value = json!({"a": "4", "b": null});
        let obj = root(&value);
        assert_eq!(obj.u64("absent").unwrap(), None);
        assert_eq!(
            obj.u64("a").unwrap_err().to_string(),
            r#"a: expected a non-negative integer, found "4""#
        );
        assert_eq!(
            obj.bool("b").unwrap_err().to_string(),
            "b: expected a boolean, found null"
        );
    }

    #[test]
    fn unsigned_rejects_negative_and_fractional_numbers() {
        let value = json!({"neg": -1, "frac": 4.0, "ok": 4});
        let obj = root(&value);
        assert!(obj.u64("neg").is_err());
        assert!(obj.u64("frac").is_err());
        assert_eq!(obj.u64("ok").unwrap(), Some(4));
    }

    #[test]
    fn int32_rejects_values_outside_its_range() {
        let value = json!({"big": 4_294_967_300_i64, "min": i32::MIN});
        let obj = root(&value);
        assert_eq!(
            obj.i32("big").unwrap_err().to_string(),
            "big: expected a 32-bit integer, found 4294967300"
        );
        assert_eq!(obj.i32("min").unwrap(), Some(i32::MIN));
    }

    #[test]
    fn doubles_accept_exact_integers_only() {
        let exact = (1_u64 << 53) + 2;
        let inexact = (1_u64 << 53) + 1;
        let value = json!({
            "xs": [0, 1, -2, 0.5, exact, u64::MAX - 2047, i64::MIN],
            "bad": [inexact]
        });
        let obj = root(&value);
        let xs = obj.array("xs").unwrap().unwrap().f64s().unwrap();
        assert_eq!(xs.len(), 7);
        assert_eq!(xs[..4], [0.0, 1.0, -2.0, 0.5]);
        assert_eq!(
            obj.array("bad")
                .unwrap()
                .unwrap()
                .f64s()
                .unwrap_err()
                .to_string(),
            "bad[0]: expected a number, found 9007199254740993"
        );
    }

    #[test]
    fn root_must_be_an_object() {
        assert_eq!(
            Obj::root(&json!([1])).unwrap_err().to_string(),
            "config: expected a JSON object, found an array"
        );
    }
}
