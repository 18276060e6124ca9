//! PostgreSQL's number templates (formatting.c's NUM version): `to_char`
//! of integers, floats and numerics, and `to_number`.
//!
//! A template is parsed into nodes (patterns and literal characters) and a
//! description (digits before and after the point, where the first and last
//! `0` are, the sign style, fill mode, `V`'s shift, ...). Each type turns its
//! value into a *number string* — the rounded digits without a sign, `#`s on
//! overflow, a Roman numeral or a scientific form — and one processor lays
//! that string into the template. `to_number` runs the same template the
//! other way, reading a number string out of the text.
//!
//! The locale patterns (`D`, `G`, `L`, `S`) use the C locale, as the
//! regression database does: `.`, `,`, a blank currency symbol and `+`/`-`.
//! Like PostgreSQL, a template with more digit positions than the number
//! string (a float cut to its 15 significant digits) ends the output where
//! the number string ends.

use crate::error::Result;
use crate::types::numeric::Numeric;
use crate::{bail, err};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Key {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    C,
    D,
    Eeee,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    RnUpper,
    RnLower,
    Sg,
    Sp,
    S,
    ThUpper,
    ThLower,
    V,
}

/// The patterns, in formatting.c's search order: the first one the rest of
/// the template starts with wins (`SG` and `SP` before `S`). Upper and lower
/// case spell the same pattern; `RN`/`rn` and `TH`/`th` also pick the case
/// of their output.
const KEYWORDS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Dec),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::B),
    ("C", Key::C),
    ("D", Key::D),
    ("EEEE", Key::Eeee),
    ("FM", Key::Fm),
    ("G", Key::G),
    ("L", Key::L),
    ("MI", Key::Mi),
    ("PL", Key::Pl),
    ("PR", Key::Pr),
    ("RN", Key::RnUpper),
    ("SG", Key::Sg),
    ("SP", Key::Sp),
    ("S", Key::S),
    ("TH", Key::ThUpper),
    ("V", Key::V),
    ("b", Key::B),
    ("c", Key::C),
    ("d", Key::D),
    ("eeee", Key::Eeee),
    ("fm", Key::Fm),
    ("g", Key::G),
    ("l", Key::L),
    ("mi", Key::Mi),
    ("pl", Key::Pl),
    ("pr", Key::Pr),
    ("rn", Key::RnLower),
    ("sg", Key::Sg),
    ("sp", Key::Sp),
    ("s", Key::S),
    ("th", Key::ThLower),
    ("v", Key::V),
];

#[derive(Clone, Copy, Debug)]
enum Node {
    Key(Key),
    Char(char),
}

/// Where an `S` sign goes: before the first digit or after the last.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum LSign {
    #[default]
    None,
    Pre,
    Post,
}

/// A template's description (formatting.c's NUMDesc).
#[derive(Clone, Debug, Default)]
struct Desc {
    /// Digit positions before and after the decimal point.
    pre: i32,
    post: i32,
    lsign: LSign,
    /// `pre` when `S` was seen before the point.
    pre_lsign_num: i32,
    /// `V`'s shift: the 9s after it.
    multi: i32,
    /// 1-based position of the first `0` before the point (0: none).
    zero_start: i32,
    /// Position of the last `0`, counting all digit positions.
    zero_end: i32,
    decimal: bool,
    zero: bool,
    blank: bool,
    fill: bool,
    lsign_set: bool,
    bracket: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    shift: bool,
    eeee: bool,
}

fn syntax(msg: &str) -> crate::error::WeirError {
    err!(Syntax, "{msg}")
}

impl Desc {
    /// NUMDesc_prepare: account for one pattern, refusing the combinations
    /// PostgreSQL refuses.
    fn add(&mut self, k: Key) -> Result<()> {
        if self.eeee && k != Key::Eeee {
            return Err(syntax("\"EEEE\" must be the last pattern used"));
        }
        match k {
            Key::Nine => {
                if self.bracket {
                    return Err(syntax("\"9\" must be ahead of \"PR\""));
                }
                if self.shift {
                    self.multi += 1;
                } else if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
            }
            Key::Zero => {
                if self.bracket {
                    return Err(syntax("\"0\" must be ahead of \"PR\""));
                }
                if !self.zero && !self.decimal {
                    self.zero = true;
                    self.zero_start = self.pre + 1;
                }
                if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
                self.zero_end = self.pre + self.post;
            }
            Key::B => {
                if self.pre == 0 && self.post == 0 && !self.zero {
                    self.blank = true;
                }
            }
            Key::D | Key::Dec => {
                if self.decimal {
                    return Err(syntax("multiple decimal points"));
                }
                if self.shift {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.decimal = true;
            }
            Key::Fm => self.fill = true,
            Key::S => {
                if self.lsign_set {
                    return Err(syntax("cannot use \"S\" twice"));
                }
                if self.plus || self.minus || self.bracket {
                    return Err(syntax("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
                }
                if !self.decimal {
                    self.lsign = LSign::Pre;
                    self.pre_lsign_num = self.pre;
                    self.lsign_set = true;
                } else if self.lsign == LSign::None {
                    self.lsign = LSign::Post;
                    self.lsign_set = true;
                }
            }
            Key::Mi | Key::Pl | Key::Sg => {
                if self.lsign_set {
                    let name = match k {
                        Key::Mi => "MI",
                        Key::Pl => "PL",
                        _ => "SG",
                    };
                    return Err(syntax(&format!("cannot use \"S\" and \"{name}\" together")));
                }
                // SG is both: a minus or a plus.
                self.minus |= k != Key::Pl;
                self.plus |= k != Key::Mi;
            }
            Key::Pr => {
                if self.lsign_set || self.plus || self.minus {
                    return Err(syntax("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
                }
                self.bracket = true;
            }
            Key::RnUpper | Key::RnLower => self.roman = true,
            Key::V => {
                if self.decimal {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.shift = true;
            }
            Key::Eeee => {
                if self.eeee {
                    return Err(syntax("cannot use \"EEEE\" twice"));
                }
                if self.blank || self.fill || self.lsign_set || self.bracket || self.minus || self.plus || self.roman || self.shift {
                    return Err(syntax("\"EEEE\" is incompatible with other formats")
                        .with_detail("\"EEEE\" may only be used together with digit and decimal point patterns.".to_string()));
                }
                self.eeee = true;
            }
            Key::Comma | Key::C | Key::G | Key::L | Key::Sp | Key::ThUpper | Key::ThLower => {}
        }
        Ok(())
    }
}

/// Parse a template: patterns, double-quoted literal text (a backslash
/// quotes the next character) and any other character as itself (a
/// backslash before a double quote makes it literal).
fn parse(fmt: &str) -> Result<(Vec<Node>, Desc)> {
    let mut nodes = Vec::new();
    let mut d = Desc::default();
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        if let Some((kw, key)) = KEYWORDS.iter().find(|(kw, _)| rest.starts_with(kw)) {
            d.add(*key)?;
            nodes.push(Node::Key(*key));
            rest = &rest[kw.len()..];
            continue;
        }
        if c == '"' {
            rest = &rest[1..];
            while let Some(mut q) = rest.chars().next() {
                if q == '"' {
                    rest = &rest[1..];
                    break;
                }
                if q == '\\' {
                    if let Some(n) = rest[1..].chars().next() {
                        rest = &rest[1..];
                        q = n;
                    }
                }
                nodes.push(Node::Char(q));
                rest = &rest[q.len_utf8()..];
            }
            continue;
        }
        let mut ch = c;
        if c == '\\' && rest[1..].starts_with('"') {
            rest = &rest[1..];
            ch = '"';
        }
        nodes.push(Node::Char(ch));
        rest = &rest[ch.len_utf8()..];
    }
    Ok((nodes, d))
}

/// The number string of a value, with the blanks before its first digit
/// and its sign (`+`, `-`, or none for Roman and scientific forms).
struct NumStr {
    digits: String,
    out_pre_spaces: i32,
    sign: u8,
}

/// Digits and point of a plain number (`orgnum`, maybe signed) fitted to the
/// template: blanks before it, or `#`s when its integer part is too long.
fn fit(orgnum: &str, d: &Desc) -> NumStr {
    let (sign, body) = match orgnum.strip_prefix('-') {
        Some(b) => (b'-', b),
        None => (b'+', orgnum),
    };
    let pre_len = body.find('.').unwrap_or(body.len()) as i32;
    if pre_len < d.pre {
        return NumStr { digits: body.to_string(), out_pre_spaces: d.pre - pre_len, sign };
    }
    if pre_len > d.pre {
        return NumStr { digits: hashes(d.pre, d.post), out_pre_spaces: 0, sign };
    }
    NumStr { digits: body.to_string(), out_pre_spaces: 0, sign }
}

/// `###.##` for a template with `pre` and `post` digits.
fn hashes(pre: i32, post: i32) -> String {
    let mut s = "#".repeat(pre.max(0) as usize);
    s.push('.');
    s.push_str(&"#".repeat(post.max(0) as usize));
    s
}

/// The `EEEE` form of NaN or an infinity: a blank, `#`s and a point.
fn sci_hashes(d: &Desc) -> String {
    let mut s: Vec<u8> = vec![b'#'; (d.pre + d.post + 6).max(1) as usize];
    s[0] = b' ';
    if let Some(c) = s.get_mut((d.pre + 1) as usize) {
        *c = b'.';
    }
    String::from_utf8(s).unwrap_or_default()
}

/// Roman numerals for 1..=3999, else fifteen `#`s.
fn roman(n: i64) -> String {
    if !(1..=3999).contains(&n) {
        return "#".repeat(15);
    }
    const ONES: [&str; 9] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    const TENS: [&str; 9] = ["X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const HUNDREDS: [&str; 9] = ["C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    let mut s = "M".repeat((n / 1000) as usize);
    for (digit, table) in [((n / 100) % 10, &HUNDREDS), ((n / 10) % 10, &TENS), (n % 10, &ONES)] {
        if digit > 0 {
            s.push_str(table[(digit - 1) as usize]);
        }
    }
    s
}

/// C's `%.*f`, with PostgreSQL's spellings of the special values.
fn c_fixed(v: f64, prec: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    format!("{:.*}", prec.max(0) as usize, v)
}

/// C's `%+.*e` with a blank for the plus sign (`-1.235e-05`, ` 4.200e+09`).
fn c_sci(v: f64, prec: i32) -> String {
    let s = format!("{:+.*e}", prec.max(0) as usize, v);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let mant = mant.strip_prefix('+').map(|m| format!(" {m}")).unwrap_or_else(|| mant.to_string());
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

/// A scientific string from numeric_out_sci, blank where a plus sign would be.
fn sci_signed(s: String) -> String {
    if s.starts_with('-') {
        s
    } else {
        format!(" {s}")
    }
}

/// to_char(numeric, template).
pub fn numeric_to_char(v: &Numeric, fmt: &str) -> Result<String> {
    let (nodes, mut d) = parse(fmt)?;
    let num = if d.roman {
        let n = v.round(0).ok().and_then(|r| r.to_i64("integer").ok()).filter(|n| i32::try_from(*n).is_ok()).unwrap_or(i32::MAX as i64);
        NumStr { digits: roman(n), out_pre_spaces: 0, sign: 0 }
    } else if d.eeee {
        let digits = if v.is_special() { sci_hashes(&d) } else { sci_signed(v.to_sci_string(d.post.max(0) as u32)) };
        NumStr { digits, out_pre_spaces: 0, sign: 0 }
    } else {
        let mut val = v.clone();
        if d.shift {
            val = val.mul(&Numeric::Fin { m: num_bigint::BigInt::from(10u32).pow(d.multi as u32), scale: 0 })?;
            d.pre += d.multi;
        }
        let x = val.round(d.post as i64)?;
        fit(&x.to_string(), &d)
    };
    process_to_char(&nodes, &mut d, num)
}

/// to_char(int2/int4/int8, template). `int8` picks int8_to_char's ways:
/// scientific form through numeric and `V` with int8 overflow checks.
pub fn int_to_char(v: i64, int8: bool, fmt: &str) -> Result<String> {
    let (nodes, mut d) = parse(fmt)?;
    let num = if d.roman {
        let n = if i32::try_from(v).is_ok() { v } else { i32::MAX as i64 };
        NumStr { digits: roman(n), out_pre_spaces: 0, sign: 0 }
    } else if d.eeee {
        let digits = if int8 { sci_signed(Numeric::from_i64(v).to_sci_string(d.post.max(0) as u32)) } else { c_sci(v as f64, d.post) };
        NumStr { digits, out_pre_spaces: 0, sign: 0 }
    } else {
        let mut value = v;
        if d.shift {
            value = if int8 {
                let overflow = || err!(NumericOutOfRange, "bigint out of range");
                let m = 10i64.checked_pow(d.multi as u32).ok_or_else(overflow)?;
                value.checked_mul(m).ok_or_else(overflow)?
            } else {
                (value as i32).wrapping_mul(10i32.wrapping_pow(d.multi as u32)) as i64
            };
            d.pre += d.multi;
        }
        let mut orgnum = value.to_string();
        if d.post > 0 {
            orgnum.push('.');
            orgnum.push_str(&"0".repeat(d.post as usize));
        }
        fit(&orgnum, &d)
    };
    process_to_char(&nodes, &mut d, num)
}

/// to_char(float4/float8, template): at most FLT_DIG (6) or DBL_DIG (15)
/// significant digits are shown, fewer decimals when the integer part is long.
pub fn float_to_char(v: f64, float4: bool, fmt: &str) -> Result<String> {
    let (nodes, mut d) = parse(fmt)?;
    let num = if d.roman {
        let r = v.round_ties_even();
        let n = if !r.is_nan() && r >= i32::MIN as f64 && r <= i32::MAX as f64 { r as i64 } else { i32::MAX as i64 };
        NumStr { digits: roman(n), out_pre_spaces: 0, sign: 0 }
    } else if d.eeee {
        let digits = if v.is_nan() || v.is_infinite() { sci_hashes(&d) } else { c_sci(v, d.post) };
        NumStr { digits, out_pre_spaces: 0, sign: 0 }
    } else {
        let mut val = v;
        if d.shift {
            val = if float4 { ((v as f32) * 10f32.powi(d.multi)) as f64 } else { v * 10f64.powi(d.multi) };
            d.pre += d.multi;
        }
        let max_digits = if float4 { 6 } else { 15 };
        let pre_len = c_fixed(val.abs(), 0).len() as i32;
        if pre_len >= max_digits {
            d.post = 0;
        } else if pre_len + d.post > max_digits {
            d.post = max_digits - pre_len;
        }
        fit(&c_fixed(val, d.post), &d)
    };
    process_to_char(&nodes, &mut d, num)
}

/// `st`, `nd`, `rd` or `th` for the number string's last digits.
fn ordinal(num: &[u8], upper: bool) -> Result<&'static str> {
    let Some(&last) = num.last().filter(|c| c.is_ascii_digit()) else {
        bail!(InvalidText, "\"{}\" is not a number", String::from_utf8_lossy(num));
    };
    let teen = num.len() > 1 && num[num.len() - 2] == b'1';
    let s = match (teen, last) {
        (false, b'1') => ["st", "ST"],
        (false, b'2') => ["nd", "ND"],
        (false, b'3') => ["rd", "RD"],
        _ => ["th", "TH"],
    };
    Ok(s[upper as usize])
}

/// The writer's state (formatting.c's NUMProc for to_char).
struct Writer<'a> {
    d: &'a Desc,
    number: Vec<u8>,
    /// Next character of `number` to write.
    at: usize,
    sign: u8,
    sign_wrote: bool,
    num_count: i32,
    /// A digit has been written (group separators print from then on).
    num_in: bool,
    /// Digit positions (and the point) passed so far.
    num_curr: i32,
    out_pre_spaces: i32,
    /// Under FM, the last digit after the point worth writing.
    last_relevant: Option<usize>,
    out: String,
}

impl Writer<'_> {
    /// The number string's byte at `i`; 0 past its end (C's terminator).
    fn byte(&self, i: usize) -> u8 {
        self.number.get(i).copied().unwrap_or(0)
    }

    fn push_byte(&mut self, b: u8) {
        self.out.push(b as char);
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|l| self.byte(l) == b'.')
    }

    /// A leading zero of a value below one is a blank: `0.1` in `9.9` is ` .1`.
    fn predec_space(&self) -> bool {
        !self.d.zero && self.at == 0 && self.byte(0) == b'0' && self.d.post != 0
    }

    fn sign_text(&self) -> char {
        if self.sign == b'-' {
            '-'
        } else {
            '+'
        }
    }

    /// NUM_numpart_to_char: a digit position or the point.
    fn numpart(&mut self, k: Key) {
        let d = self.d;
        if d.roman {
            return;
        }
        self.num_in = false;
        if !self.sign_wrote
            && (self.num_curr >= self.out_pre_spaces || (d.zero && d.zero_start == self.num_curr))
            && (!self.predec_space() || self.last_relevant_is_point())
        {
            if d.lsign_set {
                if d.lsign == LSign::Pre {
                    let c = self.sign_text();
                    self.out.push(c);
                    self.sign_wrote = true;
                }
            } else if d.bracket {
                self.out.push(if self.sign == b'+' { ' ' } else { '<' });
                self.sign_wrote = true;
            } else if self.sign == b'+' {
                if !d.fill {
                    self.out.push(' ');
                }
                self.sign_wrote = true;
            } else if self.sign == b'-' {
                self.out.push('-');
                self.sign_wrote = true;
            }
        }
        if !matches!(k, Key::Nine | Key::Zero | Key::D | Key::Dec) {
            self.num_curr += 1;
            return;
        }
        if self.num_curr < self.out_pre_spaces && (d.zero_start > self.num_curr || !d.zero) {
            if !d.fill {
                self.out.push(' ');
            }
        } else if d.zero && self.num_curr < self.out_pre_spaces && d.zero_start <= self.num_curr {
            self.out.push('0');
            self.num_in = true;
        } else {
            if self.byte(self.at) == b'.' {
                // Under FM a point with no digits after it stays: `FM9.9` of 1 is `1.`.
                self.out.push('.');
            } else if self.last_relevant.is_some_and(|l| self.at > l) && k != Key::Zero {
                // FM: a trailing zero after the point is left out.
            } else if self.predec_space() {
                if !d.fill {
                    self.out.push(' ');
                } else if self.last_relevant_is_point() {
                    self.out.push('0');
                }
            } else {
                let b = self.byte(self.at);
                self.push_byte(b);
                self.num_in = true;
            }
            if self.byte(self.at) != 0 {
                self.at += 1;
            }
        }
        let mut end = self.num_count + (self.out_pre_spaces > 0) as i32 + d.decimal as i32;
        if self.last_relevant == Some(self.at) {
            end = self.num_curr;
        }
        if self.num_curr + 1 == end {
            if self.sign_wrote && d.bracket {
                self.out.push(if self.sign == b'+' { ' ' } else { '>' });
            } else if d.lsign_set && d.lsign == LSign::Post {
                let c = self.sign_text();
                self.out.push(c);
            }
        }
        self.num_curr += 1;
    }
}

/// NUM_processor for to_char: lay the number string into the template.
fn process_to_char(nodes: &[Node], d: &mut Desc, num: NumStr) -> Result<String> {
    if d.zero_start > 0 {
        d.zero_start -= 1;
    }
    if d.eeee {
        // The scientific string is the whole result.
        return Ok(num.digits);
    }
    let mut sign = num.sign;
    let mut out_pre_spaces = num.out_pre_spaces;
    if d.roman {
        let fill = d.fill;
        *d = Desc { fill, roman: true, ..Desc::default() };
        out_pre_spaces = 0;
        sign = 0;
    }
    let sign_wrote;
    if d.plus || d.minus {
        // MI, PL and SG write the sign themselves; PL alone still wants the
        // minus of a negative number in the usual place.
        sign_wrote = !(d.plus && !d.minus);
    } else {
        if sign != b'-' && d.fill {
            d.bracket = false;
        }
        sign_wrote = sign == b'+' && d.fill && !d.lsign_set;
        if d.lsign == LSign::Pre && d.pre == d.pre_lsign_num {
            d.lsign = LSign::Post;
        }
    }
    let number = num.digits.into_bytes();
    let mut last_relevant = None;
    if d.fill && d.decimal {
        if let Some(p) = number.iter().position(|&b| b == b'.') {
            let mut lr = p;
            for (i, &b) in number.iter().enumerate().skip(p + 1) {
                if b != b'0' {
                    lr = i;
                }
            }
            // Digits under a `0` after the point are kept.
            if d.zero_end > out_pre_spaces {
                let last_zero = (number.len() as i32 - 1).min(d.zero_end - out_pre_spaces);
                if (lr as i32) < last_zero {
                    lr = last_zero as usize;
                }
            }
            last_relevant = Some(lr);
        }
    }
    let mut num_count = d.post + d.pre - 1;
    if !sign_wrote && out_pre_spaces == 0 {
        num_count += 1;
    }
    let d: &Desc = d;
    let mut w = Writer {
        d,
        number,
        at: 0,
        sign,
        sign_wrote,
        num_count,
        num_in: false,
        num_curr: 0,
        out_pre_spaces,
        last_relevant,
        out: String::new(),
    };
    for node in nodes {
        let k = match node {
            Node::Char(c) => {
                w.out.push(*c);
                continue;
            }
            Node::Key(k) => *k,
        };
        match k {
            Key::Nine | Key::Zero | Key::Dec | Key::D => w.numpart(k),
            Key::Comma | Key::G => {
                if w.num_in {
                    w.out.push(',');
                } else if !d.fill {
                    w.out.push(' ');
                }
            }
            // The C locale's currency symbol is empty, written as a blank.
            Key::L => w.out.push(' '),
            Key::RnUpper | Key::RnLower => {
                let rest = String::from_utf8_lossy(&w.number[w.at.min(w.number.len())..]).into_owned();
                let rest = if k == Key::RnLower { rest.to_lowercase() } else { rest };
                if d.fill {
                    w.out.push_str(&rest);
                } else {
                    w.out.push_str(&format!("{rest:>15}"));
                }
            }
            Key::ThUpper | Key::ThLower => {
                if d.roman || w.byte(0) == b'#' || w.sign == b'-' || d.decimal {
                    continue;
                }
                let th = ordinal(&w.number, k == Key::ThUpper)?;
                w.out.push_str(th);
            }
            Key::Mi => {
                if w.sign == b'-' {
                    w.out.push('-');
                } else if !d.fill {
                    w.out.push(' ');
                }
            }
            Key::Pl => {
                if w.sign == b'+' {
                    w.out.push('+');
                } else if !d.fill {
                    w.out.push(' ');
                }
            }
            Key::Sg => {
                let s = w.sign;
                w.push_byte(s);
            }
            Key::B | Key::C | Key::Eeee | Key::Fm | Key::Pr | Key::Sp | Key::S | Key::V => {}
        }
    }
    // Written past the end of the number string: the output ends there.
    let mut out = w.out;
    if let Some(p) = out.find('\0') {
        out.truncate(p);
    }
    Ok(out)
}

/// to_number(text, template): the digits, point and sign the template finds
/// in the text, as numeric(digit positions + V's shift, digits read after
/// the point); NULL for an empty template.
pub fn to_number(value: &str, fmt: &str) -> Result<Option<Numeric>> {
    if fmt.is_empty() {
        return Ok(None);
    }
    let (nodes, d) = parse(fmt)?;
    if d.eeee {
        bail!(FeatureNotSupported, "\"EEEE\" not supported for input");
    }
    if d.roman {
        bail!(FeatureNotSupported, "\"RN\" not supported for input");
    }
    let mut r = Reader { d: &d, input: value.as_bytes(), p: 0, number: vec![b' '], read_pre: 0, read_post: 0, read_dec: false };
    for node in &nodes {
        if r.p >= r.input.len() {
            break;
        }
        let k = match node {
            Node::Char(_) => {
                // Each literal template character skips one input character.
                r.p += r.char_len();
                continue;
            }
            Node::Key(k) => *k,
        };
        match k {
            Key::Nine | Key::Zero | Key::Dec | Key::D => r.numpart(k),
            Key::Comma | Key::G => {
                if d.fill || r.input[r.p] != b',' {
                    continue;
                }
            }
            Key::L => {
                r.eat_non_data(1);
                continue;
            }
            Key::ThUpper | Key::ThLower => {
                if !d.decimal {
                    r.eat_non_data(2);
                }
                continue;
            }
            Key::Mi | Key::Pl | Key::Sg => {
                let c = r.input[r.p];
                let wanted = match k {
                    Key::Mi => c == b'-',
                    Key::Pl => c == b'+',
                    _ => c == b'-' || c == b'+',
                };
                if wanted {
                    r.number[0] = c;
                } else {
                    r.eat_non_data(1);
                    continue;
                }
            }
            _ => continue,
        }
        r.p += 1;
    }
    if r.number.last() == Some(&b'.') {
        r.number.pop();
    }
    let text = String::from_utf8_lossy(&r.number).into_owned();
    let scale = r.read_post;
    let precision = d.pre + d.multi + scale;
    let typmod = ((precision << 16) | (scale & 0x7ff)) + 4;
    let mut n = Numeric::parse(&text)?.apply_typmod(typmod)?;
    if d.shift {
        n = n.mul(&Numeric::from_i64(10).power(&Numeric::from_i64(-(d.multi as i64)))?)?;
    }
    Ok(Some(n))
}

/// The reader's state (formatting.c's NUMProc for to_number).
struct Reader<'a> {
    d: &'a Desc,
    input: &'a [u8],
    p: usize,
    /// Sign (blank when none was read), then the digits and point read.
    number: Vec<u8>,
    read_pre: i32,
    read_post: i32,
    read_dec: bool,
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.p >= self.input.len()
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.input[self.p.min(self.input.len())..].starts_with(s)
    }

    /// Bytes of the UTF-8 character at `p`.
    fn char_len(&self) -> usize {
        match self.input.get(self.p) {
            Some(b) if *b >= 0xF0 => 4,
            Some(b) if *b >= 0xE0 => 3,
            Some(b) if *b >= 0xC0 => 2,
            _ => 1,
        }
    }

    /// Skip up to `n` characters that are not part of a number.
    fn eat_non_data(&mut self, n: usize) {
        for _ in 0..n {
            if self.done() || b"0123456789.,+-".contains(&self.input[self.p]) {
                break;
            }
            self.p += self.char_len();
        }
    }

    /// NUM_numpart_from_char: a sign before the first digit, a digit or the
    /// point, and a sign right after the last digit.
    fn numpart(&mut self, k: Key) {
        let d = self.d;
        if self.done() {
            return;
        }
        if self.input[self.p] == b' ' {
            self.p += 1;
        }
        if self.done() {
            return;
        }
        if self.number[0] == b' ' && matches!(k, Key::Zero | Key::Nine) && self.read_pre + self.read_post == 0 {
            if d.lsign_set && d.lsign == LSign::Pre {
                if self.starts_with(b"-") {
                    self.p += 1;
                    self.number[0] = b'-';
                } else if self.starts_with(b"+") {
                    self.p += 1;
                    self.number[0] = b'+';
                }
            } else {
                let c = self.input[self.p];
                if c == b'-' || (d.bracket && c == b'<') {
                    self.number[0] = b'-';
                    self.p += 1;
                } else if c == b'+' {
                    self.number[0] = b'+';
                    self.p += 1;
                }
            }
        }
        if self.done() {
            return;
        }
        let mut read = false;
        let c = self.input[self.p];
        if c.is_ascii_digit() {
            if self.read_dec && self.read_post == d.post {
                return;
            }
            self.number.push(c);
            if self.read_dec {
                self.read_post += 1;
            } else {
                self.read_pre += 1;
            }
            read = true;
        } else if d.decimal && !self.read_dec && c == b'.' {
            self.number.push(b'.');
            self.read_dec = true;
            read = true;
        }
        if self.done() {
            return;
        }
        // A sign right after the number: `5.01-` in `FM9.999999MI`.
        if self.number[0] == b' ' && self.read_pre + self.read_post > 0 {
            if d.lsign_set && read && self.p + 1 < self.input.len() && !self.input[self.p + 1].is_ascii_digit() {
                let next = self.input[self.p + 1];
                if next == b'-' || next == b'+' {
                    self.p += 1;
                    self.number[0] = next;
                }
            } else if !read && !d.lsign_set && (d.plus || d.minus) {
                let c = self.input[self.p];
                if c == b'-' || c == b'+' {
                    self.number[0] = c;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    fn num(v: &str, f: &str) -> String {
        numeric_to_char(&n(v), f).unwrap()
    }

    #[test]
    fn numeric_templates() {
        assert_eq!(num("-34338492.215397047", "9G999G999G999G999G999D999G999G999G999G999").trim(), "-34,338,492.215,397,047,000,000");
        assert_eq!(num("-34338492.215397047", "9999999999999999.999999999999999PR").trim(), "<34338492.215397047000000>");
        assert_eq!(num("4.31", "FM9999999999999999.999999999999999THPR"), "4.31");
        assert_eq!(num("0", "FM9999999999999999.999999999999999"), "0.");
        assert_eq!(num("-83028485", "FM9999999999999999.999999999999999"), "-83028485.");
        assert_eq!(num("4.31", "FM9999999999990999.990999999999999"), "0004.310");
        assert_eq!(num("100", "FM999."), "100");
        assert_eq!(num("100", "f\\\"oo999"), "f\"oo 100");
        assert_eq!(num("100", "f\"ool\"999"), "fool 100");
        assert_eq!(num("100", "f\"ool\\\"999"), "fool\"999");
        assert_eq!(num("-7.777", "9.999EEEE"), "-7.777e+00");
        assert_eq!(num("0.000012", "9.999EEEE"), " 1.200e-05");
        assert_eq!(num("inf", "9.999EEEE"), " #.#######");
        assert_eq!(num("-inf", "MI99.99"), "-##.##");
        assert_eq!(num("0", "MI9999999999.99"), "           .00");
        assert_eq!(num("-4.2", "MI99.99"), "- 4.20");
        assert_eq!(num("1234", "RN"), "       MCCXXXIV");
        assert_eq!(num("1234", "FMrn"), "mccxxxiv");
        assert_eq!(num("-12.5", "S999.99"), " -12.50");
        assert_eq!(num("9.9996", "9.999EEEE"), " 10.000e+00");
        assert_eq!(num("0.00001", "9.999999S"), " .000010+");
    }

    #[test]
    fn integer_templates() {
        assert_eq!(int_to_char(-123, true, "9999999999999999PR").unwrap().trim(), "<123>");
        assert_eq!(int_to_char(456, true, "FM9999999999999999THPR").unwrap(), "456TH");
        assert_eq!(int_to_char(123, true, "SG9999999999999999th").unwrap(), "+             123rd");
        assert_eq!(int_to_char(-4567890123456789, true, "SG9999999999999999th").unwrap(), "-4567890123456789");
        assert_eq!(int_to_char(456, true, "L9999999999999999.000").unwrap().trim(), "456.000");
        assert_eq!(
            int_to_char(4567890123456789, true, "99999 \"text\" 9999 \"9999\" 999 \"\\\"text between quote marks\\\"\" 9999").unwrap(),
            " 45678 text 9012 9999 345 \"text between quote marks\" 6789"
        );
        assert_eq!(int_to_char(12, false, "99V9").unwrap(), " 120");
        assert_eq!(int_to_char(-12, false, "FM9990").unwrap(), "-12");
        assert_eq!(int_to_char(-485, false, "FM9990SG").unwrap(), "485-");
        assert_eq!(int_to_char(125, false, "9.9EEEE").unwrap(), " 1.2e+02");
        assert_eq!(int_to_char(125, true, "9.9EEEE").unwrap(), " 1.3e+02");
        assert_eq!(int_to_char(1, false, "\"a\\\"b\"9").unwrap(), "a\"b 1");
    }

    #[test]
    fn float_templates() {
        assert_eq!(float_to_char(4200000000.0, true, "MI9999999999.99").unwrap(), " 4200000000");
        assert_eq!(float_to_char(1.5, false, "9.99999999999999999999").unwrap(), " 1.50000000000000");
        assert_eq!(float_to_char(3.7, false, "RN").unwrap(), "             IV");
        assert_eq!(float_to_char(4200000000.0, false, "MI9999999999.99").unwrap(), " 4200000000.00");
        assert_eq!(float_to_char(12345678901.0, false, "FM9999999999D9999900000000000000000").unwrap(), "##########.####");
        assert_eq!(float_to_char(-4.2, false, "9.999EEEE").unwrap(), "-4.200e+00");
        assert_eq!(float_to_char(f64::INFINITY, false, "MI99.99").unwrap(), " ##.##");
        assert_eq!(float_to_char(1234.5, false, "9,999.99").unwrap(), " 1,234.50");
    }

    #[test]
    fn bad_templates() {
        assert!(numeric_to_char(&n("1"), "9.9.9").is_err());
        assert!(numeric_to_char(&n("1"), "9EEEE9").is_err());
        assert!(numeric_to_char(&n("1"), "S9S").is_err());
        assert!(numeric_to_char(&n("1"), "99PR9").is_err());
    }

    fn tn(v: &str, f: &str) -> String {
        to_number(v, f).unwrap().unwrap().to_string()
    }

    #[test]
    fn to_number_reads_templates() {
        assert_eq!(tn("-34,338,492", "99G999G999"), "-34338492");
        assert_eq!(tn("-34,338,492.654,878", "99G999G999D999G999"), "-34338492.654878");
        assert_eq!(tn("<564646.654564>", "999999.999999PR"), "-564646.654564");
        assert_eq!(tn("0.00001-", "9.999999S"), "-0.00001");
        assert_eq!(tn("5.01-", "FM9.999999S"), "-5.01");
        assert_eq!(tn("5.01-", "FM9.999999MI"), "-5.01");
        assert_eq!(tn("5 4 4 4 4 8 . 7 8", "9 9 9 9 9 9 . 9 9"), "544448.78");
        assert_eq!(tn(".01", "FM9.99"), "0.01");
        assert_eq!(tn(".0", "99999999.99999999"), "0.0");
        assert_eq!(tn("0", "99.99"), "0");
        assert_eq!(tn(".-01", "S99.99"), "-0.01");
        assert_eq!(tn(".01-", "99.99S"), "-0.01");
        assert_eq!(tn(" . 0 1-", " 9 9 . 9 9 S"), "-0.01");
        assert_eq!(tn("34,50", "999,99"), "3450");
        assert_eq!(tn("123,000", "999G"), "123");
        assert_eq!(tn("123456", "999G999"), "123456");
        assert_eq!(tn("$1234.56", "L9,999.99"), "1234.56");
        assert_eq!(tn("$1234.56", "L99,999.99"), "1234.56");
        assert_eq!(tn("$1,234.56", "L99,999.99"), "1234.56");
        assert_eq!(tn("1234.56", "L99,999.99"), "1234.56");
        assert_eq!(tn("1,234.56", "L99,999.99"), "1234.56");
        assert_eq!(tn("42nd", "99th"), "42");
        assert!(to_number("", "").unwrap().is_none());
        assert!(to_number("1", "9EEEE").is_err());
        assert_eq!(tn("12345", "99"), "12");
        assert_eq!(tn("123", "99V9"), "12.3000000000000000");
        assert!(to_number("", "999").is_err());
    }
}
