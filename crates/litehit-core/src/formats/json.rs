//! A single-pass JSON scanner over one line's bytes, shared by every format reader.
//!
//! Owns JSON syntax (RFC 8259 objects, arrays, strings with escapes, numbers, literals) and the
//! conversion of JSON numbers to the integer rules of the trace formats. It never allocates on
//! the happy path: strings are returned as borrowed raw slices and decoded only into buffers
//! the caller reuses. It knows nothing about any trace format's fields.

/// Why a line was rejected, before the caller attaches the line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    /// The top-level field being read, if any.
    pub field: Option<&'static str>,
    pub message: String,
    /// The line is not valid JSON (as opposed to valid JSON with a wrong value).
    pub syntax: bool,
}

impl Fault {
    /// A semantic fault in `field` (valid JSON, wrong value).
    pub(crate) fn field(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field: Some(field),
            message: message.into(),
            syntax: false,
        }
    }
}

/// Nesting deeper than this inside an ignored value is rejected instead of recursing further.
const MAX_SKIP_DEPTH: usize = 256;

/// How many characters of an offending value an error message quotes.
const QUOTE_LIMIT_CHARS: usize = 48;

/// A JSON string as it appears between its quotes (escapes not yet decoded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawStr<'a> {
    pub bytes: &'a [u8],
    /// The string contains at least one backslash escape.
    pub escaped: bool,
}

/// A JSON integer literal: sign and magnitude, before any range rule is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JsonInt {
    pub negative: bool,
    pub magnitude: u64,
}

impl JsonInt {
    /// The value if it fits `i64` exactly.
    pub(crate) fn exact_i64(self) -> Option<i64> {
        if self.negative {
            0_i64.checked_sub_unsigned(self.magnitude)
        } else {
            i64::try_from(self.magnitude).ok()
        }
    }

    /// The upstream key rule: any `i64`, or a `u64` above `i64::MAX` reinterpreted as two's
    /// complement (`18446744073709551615 → -1`).
    pub(crate) fn wrapping_key(self) -> Option<i64> {
        if self.negative {
            0_i64.checked_sub_unsigned(self.magnitude)
        } else {
            Some(i64::from_ne_bytes(self.magnitude.to_ne_bytes()))
        }
    }

    /// The value as written, for messages.
    pub(crate) fn value(self) -> i128 {
        let magnitude = i128::from(self.magnitude);
        if self.negative { -magnitude } else { magnitude }
    }
}

/// A JSON number: an exact integer, or anything with a fraction or an exponent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum JsonNumber {
    Int(JsonInt),
    Float(f64),
}

impl std::fmt::Display for JsonNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(int) => write!(f, "{}", int.value()),
            Self::Float(value) => write!(f, "{value}"),
        }
    }
}

/// The top-level fields a format reader recognises; everything else is skipped.
pub(crate) trait FieldSet: Copy {
    fn classify(key: &[u8]) -> Option<Self>;
    /// A distinct index below [`MAX_FIELDS`] per field (the enum discriminant), so that
    /// [`walk_object`] can tell a repeated member from a new one.
    fn index(self) -> usize;
    fn name(self) -> &'static str;
}

/// The JSON member name of a field, checked as UTF-8 when the field set is compiled.
pub(crate) const fn field_name(key: &'static [u8]) -> &'static str {
    match std::str::from_utf8(key) {
        Ok(name) => name,
        Err(_) => panic!("a field's JSON name is UTF-8"),
    }
}

/// Declares a reader's field enum and its [`FieldSet`] from one list of `Variant => b"name"`
/// pairs, so each member name is written once (classify and name cannot drift apart);
/// `Enum::COUNT` sizes per-field arrays.
macro_rules! field_set {
    ($(#[$meta:meta])* $vis:vis enum $set:ident { $($variant:ident => $key:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $set {
            $($variant),+
        }

        impl $set {
            /// How many fields the set has.
            #[allow(dead_code)]
            $vis const COUNT: usize = [$(stringify!($variant)),+].len();
        }

        impl $crate::formats::json::FieldSet for $set {
            fn classify(key: &[u8]) -> Option<Self> {
                match key {
                    $($key => Some(Self::$variant),)+
                    _ => None,
                }
            }

            fn index(self) -> usize {
                self as usize
            }

            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => const { $crate::formats::json::field_name($key) },)+
                }
            }
        }
    };
}
pub(crate) use field_set;

/// The most fields one [`FieldSet`] may have (one bit each in a `u64`).
pub(crate) const MAX_FIELDS: usize = 64;

/// A position in one line; every method leaves it just past what it consumed.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The field whose value is being read, named in every fault.
    field: Option<&'static str>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            field: None,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }

    #[inline]
    pub(crate) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A syntax fault at the current position.
    pub(crate) fn syntax(&self, expected: &str) -> Fault {
        let found = match self.peek() {
            None => "end of line".to_owned(),
            Some(byte) if byte.is_ascii_graphic() || byte == b' ' => {
                format!("'{}'", char::from(byte))
            }
            Some(byte) => format!("byte 0x{byte:02x}"),
        };
        Fault {
            field: self.field,
            message: format!(
                "invalid JSON at column {}: expected {expected}, found {found}",
                self.pos + 1
            ),
            syntax: true,
        }
    }

    /// A semantic fault: the value at the current position is valid JSON of the wrong shape
    /// (or a syntax fault if it is not valid JSON). Consumes the value to quote it.
    pub(crate) fn mismatch(&mut self, expected: &str) -> Fault {
        match self.describe_value() {
            Ok(found) => Fault {
                field: self.field,
                message: format!("expected {expected}, found {found}"),
                syntax: false,
            },
            Err(syntax) => syntax,
        }
    }

    /// A semantic fault about the current field.
    pub(crate) fn fault(&self, message: impl Into<String>) -> Fault {
        Fault {
            field: self.field,
            message: message.into(),
            syntax: false,
        }
    }

    /// Quotes the value at the current position (consuming it) for an error message.
    fn describe_value(&mut self) -> Result<String, Fault> {
        self.skip_ws();
        let start = self.pos;
        let shape = match self.peek() {
            Some(b'{') => Some("an object"),
            Some(b'[') => Some("an array"),
            _ => None,
        };
        self.skip_value()?;
        if let Some(shape) = shape {
            return Ok(shape.to_owned());
        }
        Ok(quote(&self.bytes[start..self.pos]))
    }

    /// After the top-level value: only whitespace may follow.
    pub(crate) fn finish(&mut self) -> Result<(), Fault> {
        self.skip_ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            self.field = None;
            Err(self.syntax("end of line after the JSON object"))
        }
    }

    /// Reads a string whose opening quote is at the current position.
    pub(crate) fn raw_string(&mut self) -> Result<RawStr<'a>, Fault> {
        if !self.eat(b'"') {
            return Err(self.syntax("'\"'"));
        }
        let start = self.pos;
        let mut escaped = false;
        loop {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(self.syntax("a closing '\"'"));
            };
            match byte {
                b'"' => {
                    let bytes = &self.bytes[start..self.pos];
                    self.pos += 1;
                    return Ok(RawStr { bytes, escaped });
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1;
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            for _ in 0..4 {
                                if !self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                                    return Err(self.syntax("4 hex digits after \\u"));
                                }
                                self.pos += 1;
                            }
                        }
                        _ => return Err(self.syntax("a valid escape character")),
                    }
                }
                0..=0x1f => return Err(self.syntax("no raw control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    /// Reads a string value into `out` (cleared first), decoding escapes.
    pub(crate) fn string_into(&mut self, out: &mut String) -> Result<(), Fault> {
        out.clear();
        if self.peek() != Some(b'"') {
            return Err(self.mismatch("a string"));
        }
        let raw = self.raw_string()?;
        decode_into(raw, out).map_err(|reason| self.fault(reason))
    }

    /// Reads an integer value (no fraction, no exponent).
    pub(crate) fn integer(&mut self) -> Result<JsonInt, Fault> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let digits_start = self.pos;
        let mut magnitude = 0_u64;
        while let Some(&byte) = self.bytes.get(self.pos) {
            let digit = byte.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            // Wrapping is fine: more than 19 digits are re-checked below.
            magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(digit));
            self.pos += 1;
        }
        let digit_count = self.pos - digits_start;
        if digit_count == 0 {
            if negative {
                return Err(self.syntax("a digit"));
            }
            return Err(self.mismatch("an integer"));
        }
        if digit_count > 1 && self.bytes[digits_start] == b'0' {
            self.pos = digits_start + 1;
            return Err(self.syntax("no leading zero"));
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            self.pos = start;
            return Err(self.mismatch("an integer"));
        }
        if digit_count > 19 {
            magnitude = checked_decimal(&self.bytes[digits_start..self.pos]).ok_or_else(|| {
                self.fault(format!(
                    "expected a 64-bit integer, found {}",
                    String::from_utf8_lossy(&self.bytes[start..self.pos])
                ))
            })?;
        }
        Ok(JsonInt {
            negative,
            magnitude,
        })
    }

    /// Reads an integer that must fit `i64` exactly.
    pub(crate) fn exact_i64(&mut self) -> Result<i64, Fault> {
        let int = self.integer()?;
        int.exact_i64().ok_or_else(|| {
            self.fault(format!(
                "expected a 64-bit signed integer, found {}",
                int.value()
            ))
        })
    }

    /// Reads an integer that must be `> 0` and fit `i64`.
    pub(crate) fn positive_i64(&mut self) -> Result<i64, Fault> {
        let int = self.integer()?;
        int.exact_i64().filter(|value| *value > 0).ok_or_else(|| {
            self.fault(format!(
                "expected a positive integer, found {}",
                int.value()
            ))
        })
    }

    /// Reads an integer that must be `>= 0` and fit `i64`.
    pub(crate) fn non_negative_i64(&mut self) -> Result<i64, Fault> {
        let int = self.integer()?;
        int.exact_i64().filter(|value| *value >= 0).ok_or_else(|| {
            self.fault(format!(
                "expected a non-negative integer, found {}",
                int.value()
            ))
        })
    }

    /// Reads a string value and returns it undecoded (the caller decodes if it keeps it).
    pub(crate) fn string_raw_value(&mut self) -> Result<RawStr<'a>, Fault> {
        if self.peek() == Some(b'"') {
            self.raw_string()
        } else {
            Err(self.mismatch("a string"))
        }
    }

    /// Reads one block key: an `i64`, or a `u64` above `i64::MAX` wrapped (two's complement).
    #[inline]
    pub(crate) fn key(&mut self) -> Result<i64, Fault> {
        let start = self.pos;
        let int = self.integer()?;
        int.wrapping_key().ok_or_else(|| {
            self.fault(format!(
                "expected a 64-bit integer key, found {}",
                String::from_utf8_lossy(&self.bytes[start..self.pos])
            ))
        })
    }

    /// Reads an array of keys into `out` (cleared first).
    ///
    /// The hot loop of every reader: plain decimal keys take a fast path over local indices;
    /// anything unusual (a sign edge, a float, 20 digits, bad syntax) falls back to
    /// [`Cursor::key`] for the exact rule and message.
    pub(crate) fn key_array_into(&mut self, out: &mut Vec<i64>) -> Result<(), Fault> {
        out.clear();
        if self.peek() != Some(b'[') {
            return Err(self.mismatch("an array of integers"));
        }
        let bytes = self.bytes;
        let mut pos = skip_ws_at(bytes, self.pos + 1);
        if bytes.get(pos) == Some(&b']') {
            self.pos = pos + 1;
            return Ok(());
        }
        loop {
            pos = skip_ws_at(bytes, pos);
            if let Some((key, end)) = simple_key_at(bytes, pos) {
                out.push(key);
                pos = end;
            } else {
                self.pos = pos;
                out.push(self.key()?);
                pos = self.pos;
            }
            pos = skip_ws_at(bytes, pos);
            match bytes.get(pos) {
                Some(b',') => pos += 1,
                Some(b']') => {
                    self.pos = pos + 1;
                    return Ok(());
                }
                _ => {
                    self.pos = pos;
                    return Err(self.syntax("',' or ']'"));
                }
            }
        }
    }

    /// Walks an array value, calling `on_element` with the cursor at each element (whitespace
    /// skipped); `on_element` must consume exactly the element.
    pub(crate) fn array(
        &mut self,
        expected: &str,
        mut on_element: impl FnMut(&mut Self) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        if self.peek() != Some(b'[') {
            return Err(self.mismatch(expected));
        }
        self.pos += 1;
        self.skip_ws();
        if self.eat(b']') {
            return Ok(());
        }
        loop {
            self.skip_ws();
            on_element(self)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.syntax("',' or ']'")),
            }
        }
    }

    /// Reads a number value, exact when it is an integer.
    pub(crate) fn number(&mut self) -> Result<JsonNumber, Fault> {
        let start = self.pos;
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => {}
            _ => return Err(self.mismatch("a number")),
        }
        let is_integer = self.number_token()?;
        if is_integer {
            self.pos = start;
            return self.integer().map(JsonNumber::Int);
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos])
            .map_err(|_| self.fault("expected an ASCII number"))?;
        text.parse::<f64>()
            .map(JsonNumber::Float)
            .map_err(|_| self.fault(format!("expected a number, found {text}")))
    }

    /// Consumes a number token by the JSON grammar; returns whether it is an integer.
    ///
    /// A number outside the double range is invalid JSON for upstream's reader (rapidjson's
    /// "number too big"), whatever field holds it, so it is a syntax fault here too: a value
    /// that rounds to ±infinity (`1e999`, a 400-digit integer), or a positive exponent above
    /// `308 +` the number of fraction digits (rapidjson refuses `0e999` on the exponent alone).
    fn number_token(&mut self) -> Result<bool, Fault> {
        let start = self.pos;
        self.eat(b'-');
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(self.syntax("a digit")),
        }
        let int_digits = self.pos - int_start;
        let mut is_integer = true;
        let mut fraction_digits = 0;
        if self.eat(b'.') {
            is_integer = false;
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.syntax("a digit after '.'"));
            }
            let fraction_start = self.pos;
            self.skip_digits();
            fraction_digits = self.pos - fraction_start;
        }
        let mut positive_exponent = None;
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            is_integer = false;
            let negative = match self.peek() {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.syntax("a digit in the exponent"));
            }
            let exponent_start = self.pos;
            self.skip_digits();
            if !negative {
                positive_exponent = Some(
                    checked_decimal(&self.bytes[exponent_start..self.pos]).unwrap_or(u64::MAX),
                );
            }
        }
        // Only a positive exponent or a very long integer part can leave the double range.
        if positive_exponent.is_some() || int_digits > MAX_DOUBLE_DECIMAL_EXPONENT {
            let max_exponent = MAX_DOUBLE_DECIMAL_EXPONENT.saturating_add(fraction_digits);
            let exponent_too_big = positive_exponent
                .is_some_and(|exponent| exponent > u64::try_from(max_exponent).unwrap_or(u64::MAX));
            let text = &self.bytes[start..self.pos];
            let infinite = std::str::from_utf8(text)
                .ok()
                .and_then(|text| text.parse::<f64>().ok())
                .is_none_or(f64::is_infinite);
            if exponent_too_big || infinite {
                return Err(Fault {
                    field: self.field,
                    message: format!(
                        "invalid JSON at column {}: expected a number within the double range, found {}",
                        start + 1,
                        quote(text)
                    ),
                    syntax: true,
                });
            }
        }
        Ok(is_integer)
    }

    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), Fault> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax("a JSON value"))
        }
    }

    /// Reads `true` or `false`.
    pub(crate) fn bool(&mut self) -> Result<bool, Fault> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => Err(self.mismatch("a bool")),
        }
    }

    /// Skips one value of any type, checking its syntax.
    pub(crate) fn skip_value(&mut self) -> Result<(), Fault> {
        self.skip_value_nested(0)
    }

    fn skip_value_nested(&mut self, depth: usize) -> Result<(), Fault> {
        if depth > MAX_SKIP_DEPTH {
            return Err(self.fault(format!(
                "expected at most {MAX_SKIP_DEPTH} nested levels, found more"
            )));
        }
        match self.peek() {
            Some(b'"') => self.raw_string().map(|_| ()),
            Some(b'-' | b'0'..=b'9') => self.number_token().map(|_| ()),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'[') => self.array("an array", |cur| cur.skip_value_nested(depth + 1)),
            Some(b'{') => {
                self.pos += 1;
                self.skip_ws();
                if self.eat(b'}') {
                    return Ok(());
                }
                loop {
                    self.skip_ws();
                    self.raw_string()?;
                    self.skip_ws();
                    if !self.eat(b':') {
                        return Err(self.syntax("':'"));
                    }
                    self.skip_ws();
                    self.skip_value_nested(depth + 1)?;
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(());
                        }
                        _ => return Err(self.syntax("',' or '}'")),
                    }
                }
            }
            _ => Err(self.syntax("a JSON value")),
        }
    }
}

/// The largest decimal exponent of a finite double (`DBL_MAX ≈ 1.8e308`).
const MAX_DOUBLE_DECIMAL_EXPONENT: usize = 308;

/// `text` for an error message, cut after [`QUOTE_LIMIT_CHARS`] characters.
fn quote(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut quoted: String = text.chars().take(QUOTE_LIMIT_CHARS).collect();
    if text.chars().nth(QUOTE_LIMIT_CHARS).is_some() {
        quoted.push('…');
    }
    quoted
}

#[inline]
fn skip_ws_at(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(pos) {
        pos += 1;
    }
    pos
}

/// The common key shape: an optional `-` and 1..=19 digits without a leading zero, not followed
/// by a fraction or exponent. 19 digits always fit `u64`; the upstream rule then applies
/// (positive values wrap into `i64`, negative ones must be `>= i64::MIN`). Returns the key and
/// the end position, or `None` to take the exact slow path.
#[inline]
fn simple_key_at(bytes: &[u8], pos: usize) -> Option<(i64, usize)> {
    let negative = bytes.get(pos) == Some(&b'-');
    let digits_start = pos + usize::from(negative);
    let mut end = digits_start;
    let mut magnitude = 0_u64;
    while let Some(&byte) = bytes.get(end) {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        if end - digits_start == 19 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(digit);
        end += 1;
    }
    let digit_count = end - digits_start;
    if digit_count == 0
        || (digit_count > 1 && bytes[digits_start] == b'0')
        || matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
    {
        return None;
    }
    let key = if negative {
        0_i64.checked_sub_unsigned(magnitude)?
    } else {
        i64::from_ne_bytes(magnitude.to_ne_bytes())
    };
    Some((key, end))
}

/// Parses a run of ASCII digits as `u64`, `None` on overflow.
fn checked_decimal(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0_u64, |acc, &byte| {
        acc.checked_mul(10)?.checked_add(u64::from(byte - b'0'))
    })
}

/// Walks the top-level object of a line, calling `on_field` for each recognised field with the
/// cursor at its value (whitespace skipped); other fields are skipped, and so is every
/// occurrence of a field after its first (first wins, as upstream). Checks that nothing but
/// whitespace follows the object.
pub(crate) fn walk_object<'a, F: FieldSet>(
    cur: &mut Cursor<'a>,
    mut on_field: impl FnMut(&mut Cursor<'a>, F) -> Result<(), Fault>,
) -> Result<(), Fault> {
    cur.skip_ws();
    if cur.peek() != Some(b'{') {
        return Err(Fault {
            syntax: true,
            ..cur.mismatch("a JSON object")
        });
    }
    cur.pos += 1;
    cur.skip_ws();
    if cur.eat(b'}') {
        return cur.finish();
    }
    let mut seen = 0_u64;
    loop {
        cur.skip_ws();
        if cur.peek() != Some(b'"') {
            return Err(cur.syntax("a field name"));
        }
        let key = cur.raw_string()?;
        // A repeated member: upstream's reader (rapidjson `FindMember`) takes the first
        // occurrence, so a later one is only checked as JSON, as upstream parses it.
        let field = classify_key::<F>(key).filter(|field| {
            debug_assert!(field.index() < MAX_FIELDS, "one bit per field");
            let bit = 1_u64 << field.index();
            let first = seen & bit == 0;
            seen |= bit;
            first
        });
        cur.skip_ws();
        if !cur.eat(b':') {
            return Err(cur.syntax("':'"));
        }
        cur.skip_ws();
        match field {
            Some(field) => {
                cur.field = Some(field.name());
                on_field(cur, field)?;
                cur.field = None;
            }
            None => cur.skip_value()?,
        }
        cur.skip_ws();
        match cur.peek() {
            Some(b',') => cur.pos += 1,
            Some(b'}') => {
                cur.pos += 1;
                return cur.finish();
            }
            _ => return Err(cur.syntax("',' or '}'")),
        }
    }
}

/// Classifies a field name, decoding escapes first (rare: allocates only then).
fn classify_key<F: FieldSet>(key: RawStr<'_>) -> Option<F> {
    if !key.escaped {
        return F::classify(key.bytes);
    }
    let mut decoded = String::new();
    decode_into(key, &mut decoded).ok()?;
    F::classify(decoded.as_bytes())
}

/// Appends the decoded text of `raw` to `out`.
pub(crate) fn decode_into(raw: RawStr<'_>, out: &mut String) -> Result<(), &'static str> {
    const INVALID_UTF8: &str = "expected a UTF-8 string, found invalid UTF-8";
    if !raw.escaped {
        out.push_str(std::str::from_utf8(raw.bytes).map_err(|_| INVALID_UTF8)?);
        return Ok(());
    }
    let mut rest = raw.bytes;
    while let Some(backslash) = memchr::memchr(b'\\', rest) {
        out.push_str(std::str::from_utf8(&rest[..backslash]).map_err(|_| INVALID_UTF8)?);
        let (decoded, used) = decode_escape(&rest[backslash + 1..])?;
        out.push(decoded);
        rest = &rest[backslash + 1 + used..];
    }
    out.push_str(std::str::from_utf8(rest).map_err(|_| INVALID_UTF8)?);
    Ok(())
}

/// Decodes the escape after a backslash; returns the character and the bytes it used.
fn decode_escape(after: &[u8]) -> Result<(char, usize), &'static str> {
    const BAD_SURROGATE: &str = "expected a valid \\u surrogate pair, found an unpaired surrogate";
    let simple = match after.first() {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            let high = hex4(after.get(1..5))?;
            if !(0xD800..0xE000).contains(&high) {
                return char::from_u32(high).map(|c| (c, 5)).ok_or(BAD_SURROGATE);
            }
            if high >= 0xDC00 || after.get(5..7) != Some(b"\\u") {
                return Err(BAD_SURROGATE);
            }
            let low = hex4(after.get(7..11))?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(BAD_SURROGATE);
            }
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return char::from_u32(code).map(|c| (c, 11)).ok_or(BAD_SURROGATE);
        }
        _ => return Err("expected a valid escape, found an invalid one"),
    };
    Ok((simple, 1))
}

fn hex4(digits: Option<&[u8]>) -> Result<u32, &'static str> {
    let digits = digits.ok_or("expected 4 hex digits after \\u")?;
    let text = std::str::from_utf8(digits).map_err(|_| "expected 4 hex digits after \\u")?;
    u32::from_str_radix(text, 16).map_err(|_| "expected 4 hex digits after \\u")
}

/// Writes `value` in decimal into `out` (cleared first) without allocating once warm.
pub(crate) fn write_decimal(out: &mut String, mut value: u64) {
    let mut digits = [0_u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        // `value % 10 < 10`, so the cast is lossless.
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.clear();
    out.extend(digits[start..].iter().map(|&digit| char::from(digit)));
}

#[cfg(test)]
mod tests {
    use super::*;

    field_set! {
        enum Probe {
            A => b"a",
        }
    }

    fn read_a(line: &str) -> Result<Vec<i64>, Fault> {
        let mut keys = Vec::new();
        let mut cur = Cursor::new(line.as_bytes());
        walk_object::<Probe>(&mut cur, |cur, Probe::A| cur.key_array_into(&mut keys))?;
        Ok(keys)
    }

    #[test]
    fn keys_follow_the_upstream_wrapping_rule() {
        assert_eq!(
            read_a(r#"{"a":[9223372036854775808,18446744073709551615,-9223372036854775808,0,-0]}"#)
                .unwrap(),
            [i64::MIN, -1, i64::MIN, 0, 0]
        );
        for bad in [
            "18446744073709551616",
            "-9223372036854775809",
            "1.0",
            "1e3",
            "\"1\"",
            "true",
        ] {
            let fault = read_a(&format!("{{\"a\":[{bad}]}}")).unwrap_err();
            assert_eq!(fault.field, Some("a"), "{bad}");
            assert!(!fault.syntax, "{bad}: {}", fault.message);
        }
    }

    #[test]
    fn fast_key_path_agrees_with_the_exact_rule() {
        let cases = [
            "0",
            "7",
            "-7",
            "12345678",
            "123456789",
            "1234567890123456",
            "12345678901234567",
            "999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "9223372036854775808",
            "9999999999999999999",
            "-9223372036854775808",
            "-9223372036854775809",
            "-1234567890123456789",
            "18446744073709551615",
        ];
        for text in cases {
            let expected = text.parse::<i64>().ok().or_else(|| {
                text.parse::<u64>()
                    .ok()
                    .map(|v| i64::from_ne_bytes(v.to_ne_bytes()))
            });
            for suffix in ["", ",", ", 1234567890]", "]}"] {
                let padded = format!("{text}{suffix}");
                let fast = simple_key_at(padded.as_bytes(), 0).map(|(key, end)| {
                    assert_eq!(end, text.len(), "{padded}");
                    key
                });
                if let Some(fast) = fast {
                    assert_eq!(Some(fast), expected, "{padded}");
                }
            }
            assert_eq!(
                read_a(&format!("{{\"a\":[{text}]}}")).ok().map(|k| k[0]),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn syntax_errors_are_reported_as_such() {
        for bad in [
            r#"{"a":[1,]}"#,
            r#"{"a":[1}"#,
            r#"{"a":[01]}"#,
            r#"{"a":[1] "#,
            r#"{"a":[1]} x"#,
            r#"{"b":{"c":[1,{"d":"\x"}]}}"#,
            r#"{"b":"unterminated}"#,
            r#"{"b":tru}"#,
            r#"{"b":1,}"#,
            r#"{"b" 1}"#,
            "",
        ] {
            let fault = read_a(bad).unwrap_err();
            assert!(fault.syntax, "{bad}: {}", fault.message);
        }
    }

    #[test]
    fn unknown_values_of_every_shape_are_skipped() {
        let line = r#" { "x" : {"y":[1,-2.5e-3,"s\"\\\u00e9",true,false,null,{}]}, "a" : [ 7 , 8 ] , "z":"\ud83d\ude00" } "#;
        assert_eq!(read_a(line).unwrap(), [7, 8]);
    }

    #[test]
    fn escaped_field_names_are_decoded() {
        assert_eq!(read_a(r#"{"\u0061":[5]}"#).unwrap(), [5]);
    }

    #[test]
    fn strings_decode_escapes_and_reject_bad_surrogates() {
        let mut out = String::new();
        let mut cur = Cursor::new(br#""a\n\u00e9\ud83d\ude00\/""#);
        cur.string_into(&mut out).unwrap();
        assert_eq!(out, "a\n\u{e9}\u{1F600}/");
        let mut cur = Cursor::new(br#""\udc00""#);
        assert!(cur.string_into(&mut out).is_err());
    }

    #[test]
    fn numbers_keep_integers_exact() {
        let mut cur = Cursor::new(b"1763975741548745");
        assert_eq!(
            cur.number().unwrap(),
            JsonNumber::Int(JsonInt {
                negative: false,
                magnitude: 1_763_975_741_548_745
            })
        );
        let mut cur = Cursor::new(b"61.114");
        assert_eq!(cur.number().unwrap(), JsonNumber::Float(61.114));
    }

    #[test]
    fn a_repeated_field_is_read_from_its_first_occurrence() {
        assert_eq!(read_a(r#"{"a":[1,2,3],"a":[7,8,9]}"#).unwrap(), [1, 2, 3]);
        assert_eq!(read_a(r#"{"a":[1],"\u0061":[7]}"#).unwrap(), [1]);
        // The later occurrence is checked as JSON only, not as a key array.
        assert_eq!(read_a(r#"{"a":[1],"a":"text"}"#).unwrap(), [1]);
        assert!(read_a(r#"{"a":[1],"a":[1,]}"#).unwrap_err().syntax);
    }

    #[test]
    fn numbers_outside_the_double_range_are_invalid_json_anywhere() {
        for bad in [
            "1e999",
            "-1e999",
            "0e999",
            "1.5e309",
            "1e400",
            &"9".repeat(400),
        ] {
            for line in [
                format!(r#"{{"x":{bad},"a":[1]}}"#),
                format!(r#"{{"x":[{{"y":{bad}}}],"a":[1]}}"#),
                format!(r#"{{"a":[1],"a":{bad}}}"#),
            ] {
                let fault = read_a(&line).unwrap_err();
                assert!(fault.syntax, "{line}: {}", fault.message);
                assert!(fault.message.contains("double range"), "{}", fault.message);
            }
            // A field that is read refuses it too (as no integer, or as out of range).
            assert!(read_a(&format!(r#"{{"a":[{bad}]}}"#)).is_err(), "{bad}");
            let mut cur = Cursor::new(bad.as_bytes());
            assert!(cur.number().unwrap_err().syntax, "{bad}");
        }
        for fine in [
            "1e308",
            "1.7976931348623157e308",
            "0.5e309",
            "1e-999",
            "-0e-999",
            "10e307",
            &"9".repeat(300),
        ] {
            let line = format!(r#"{{"x":{fine},"a":[1]}}"#);
            if fine == "0.5e309" {
                // 5e308 is past DBL_MAX although the exponent rule lets it through.
                assert!(read_a(&line).is_err(), "{line}");
                continue;
            }
            assert_eq!(read_a(&line).unwrap(), [1], "{line}");
        }
    }

    #[test]
    fn deep_nesting_is_rejected_without_overflowing_the_stack() {
        let line = format!("{{\"x\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(read_a(&line).is_err());
    }
}
