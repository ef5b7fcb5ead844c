//! Strict, path-aware reading of JSON values with upstream's (rapidjson helper) typing rules.
//!
//! A missing key is `Ok(None)` (the caller applies the default); a present key of the wrong
//! type is a [`ConfigError::WrongType`] naming the field path (`instances[1].block_size`).
//! `null` is a wrong type like any other. Unsigned fields take only non-negative integers,
//! `4.0` is not an integer, and a double field takes any number that a `f64` holds exactly.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{ConfigError, Result};

/// Parses JSON text into a [`Value`] in which a member name repeated in one object keeps its
/// FIRST value, as upstream's reader (rapidjson `FindMember`) takes it; `serde_json::Value`
/// itself keeps the last. Later values are still parsed, so they must be valid JSON (and, as
/// for any number, within the double range).
pub(super) fn parse_first_wins(json: &str) -> serde_json::Result<Value> {
    serde_json::from_str::<FirstWins>(json).map(|first_wins| first_wins.0)
}

/// A [`Value`] deserialized with the first-wins rule for repeated member names.
struct FirstWins(Value);

impl<'de> Deserialize<'de> for FirstWins {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer
            .deserialize_any(FirstWinsVisitor)
            .map(FirstWins)
    }
}

struct FirstWinsVisitor;

impl<'de> Visitor<'de> for FirstWinsVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> std::result::Result<Value, E> {
        // serde_json refuses numbers beyond the double range before this, so `value` is finite.
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> std::result::Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(FirstWins(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some((name, FirstWins(value))) = map.next_entry::<String, FirstWins>()? {
            members.entry(name).or_insert(value);
        }
        Ok(Value::Object(members))
    }
}

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
    fn a_repeated_member_keeps_its_first_value_at_every_depth() {
        let value =
            parse_first_wins(r#"{"a":1,"b":{"c":"x","c":"y"},"a":2,"d":[{"e":true,"e":false}]}"#)
                .unwrap();
        assert_eq!(value, json!({"a": 1, "b": {"c": "x"}, "d": [{"e": true}]}));
        // A later value must still be valid JSON within the double range.
        assert!(parse_first_wins(r#"{"a":1,"a":1e999}"#).is_err());
        assert!(parse_first_wins(r#"{"a":1,"a":[1,]}"#).is_err());
        assert!(parse_first_wins(r#"{"x":-1e999}"#).is_err());
    }

    #[test]
    fn first_wins_reads_every_scalar_as_serde_json_does() {
        let text = r#"{"i":-3,"u":18446744073709551615,"f":0.5,"s":"\u00e9","n":null,"t":true}"#;
        assert_eq!(
            parse_first_wins(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
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
