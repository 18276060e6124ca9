//! PostgreSQL's regular-expression functions (`regexp_replace`,
//! `regexp_match(es)`, `regexp_count`, `regexp_instr`, `regexp_like`,
//! `regexp_substr`, `regexp_split_to_array`, `substring(x from pattern)`)
//! and SQL's `SIMILAR TO` patterns.
//!
//! PostgreSQL's patterns are Spencer ARE; weir runs them on the `regex`
//! crate, or on `fancy_regex` (backtracking, with a step limit) when they have
//! back references (`(.)\1`). `translate` maps the ARE forms the two spell
//! differently (`\m \M \y \Y \Z`, flags as inline groups) and refuses, with
//! 2201B, what neither takes (lookaround). Positions are counted in
//! characters, as PostgreSQL does; a match loop advances as PostgreSQL's
//! `setup_regexp_matches` does (one character past an empty match).
//!
//! May import `types`, `error` and `exec`'s function helpers.

use std::cell::RefCell;

use arrow::array::*;
use regex::Regex;

use super::registry::{arc, Args};
use crate::error::{Result, WeirError};
use crate::types::array::format_array;
use crate::{bail, err};

/// A compiled pattern: on the `regex` crate, or on `fancy_regex` (a backtracking matcher
/// over it) when the pattern has back references, which the `regex` crate lacks.
pub enum Re {
    Fast(Regex),
    Backtracking(fancy_regex::Regex),
}

impl Re {
    /// The first match at or after byte `at`: the spans of the match and its groups.
    fn spans_at(&self, s: &str, at: usize) -> Result<Option<Spans>> {
        Ok(match self {
            Re::Fast(re) => re.captures_at(s, at).map(|c| (0..c.len()).map(|k| c.get(k).map(|g| (g.start(), g.end()))).collect()),
            Re::Backtracking(re) => re
                .captures_from_pos(s, at)
                .map_err(backtrack_error)?
                .map(|c| (0..c.len()).map(|k| c.get(k).map(|g| (g.start(), g.end()))).collect()),
        })
    }

    pub fn is_match(&self, s: &str) -> Result<bool> {
        match self {
            Re::Fast(re) => Ok(re.is_match(s)),
            Re::Backtracking(re) => re.is_match(s).map_err(backtrack_error),
        }
    }
}

/// A backtracking match that ran out of steps (PostgreSQL's 2201B for a too complex
/// regular expression).
fn backtrack_error(e: fancy_regex::Error) -> WeirError {
    invalid(&format!("regular expression failed: {e}"))
}

/// A compiled pattern and the options of its flags string.
pub struct Pattern {
    pub re: Re,
    /// 'g': every match (only where a function takes it).
    pub global: bool,
}

/// Parsed flags (PostgreSQL's `parse_re_flags`).
#[derive(Default, Clone, Copy)]
struct Flags {
    global: bool,
    icase: bool,
    /// '.' and bracket negations stop at newlines ('n', 'm', 'p').
    newline_dot: bool,
    /// '^' and '$' match at newlines ('n', 'm', 'w').
    newline_anchor: bool,
    expanded: bool,
    quote: bool,
}

fn parse_flags(flags: &str) -> Result<Flags> {
    let mut f = Flags::default();
    for c in flags.chars() {
        match c {
            'g' => f.global = true,
            'i' => f.icase = true,
            'c' => f.icase = false,
            'n' | 'm' => {
                f.newline_dot = true;
                f.newline_anchor = true;
            }
            's' => {
                f.newline_dot = false;
                f.newline_anchor = false;
            }
            'p' => {
                f.newline_dot = true;
                f.newline_anchor = false;
            }
            'w' => {
                f.newline_dot = false;
                f.newline_anchor = true;
            }
            'x' => f.expanded = true,
            't' => f.expanded = false,
            'q' => f.quote = true,
            'e' => f.quote = false,
            _ => bail!(InvalidParameterValue, "invalid regular expression option: \"{c}\""),
        }
    }
    Ok(f)
}

fn invalid(what: &str) -> WeirError {
    err!(InvalidRegularExpression, "invalid regular expression: {what}")
}

/// An ARE pattern in the `regex` crate's syntax.
fn translate(p: &str, backrefs: &mut bool) -> Result<String> {
    let mut out = String::with_capacity(p.len() + 8);
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    let mut depth = 0i32;
    let mut in_bracket = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if in_bracket {
            match c {
                ']' => {
                    in_bracket = false;
                    out.push(']');
                }
                '[' if matches!(chars.get(i), Some(':' | '.' | '=')) => {
                    // [:alpha:] and friends, copied to their closing pair.
                    let close = chars[i];
                    out.push('[');
                    while i < chars.len() {
                        out.push(chars[i]);
                        if chars[i] == ']' && i > 0 && chars[i - 1] == close {
                            i += 1;
                            break;
                        }
                        i += 1;
                    }
                }
                '[' | '&' | '~' | '-' if c != '-' || matches!(chars.get(i), Some('-')) => {
                    // Characters the crate reads as class operators.
                    out.push('\\');
                    out.push(c);
                }
                '\\' => {
                    let Some(&e) = chars.get(i) else { return Err(invalid("invalid escape \\ sequence")) };
                    i += 1;
                    out.push('\\');
                    out.push(e);
                }
                _ => out.push(c),
            }
            continue;
        }
        match c {
            '[' => {
                in_bracket = true;
                out.push('[');
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                // A leading ']' is a literal member.
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '(' => {
                if chars.get(i) == Some(&'?') {
                    // (?:…) and inline flags pass; lookaround is not the crate's.
                    match chars.get(i + 1) {
                        Some('=' | '!' | '<') => bail!(FeatureNotSupported, "regular expression lookaround is not supported"),
                        Some(c) if *c == ':' || c.is_ascii_alphabetic() => {}
                        _ => return Err(invalid("quantifier operand invalid")),
                    }
                }
                depth += 1;
                out.push('(');
            }
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(invalid("parentheses () not balanced"));
                }
                out.push(')');
            }
            '{' => {
                // A bound: {m}, {m,}, {m,n} with m <= n; anything else is an error in ARE.
                let mut j = i;
                let mut body = String::new();
                while j < chars.len() && chars[j] != '}' {
                    body.push(chars[j]);
                    j += 1;
                }
                let nums: Vec<&str> = body.split(',').collect();
                let parse = |s: &str| s.parse::<u32>().ok();
                let ok = j < chars.len()
                    && match nums.as_slice() {
                        [m] => parse(m).is_some(),
                        [m, n] if n.is_empty() => parse(m).is_some(),
                        [m, n] => match (parse(m), parse(n)) {
                            (Some(m), Some(n)) => {
                                if m > n {
                                    return Err(invalid("invalid repetition count(s)"));
                                }
                                true
                            }
                            _ => false,
                        },
                        _ => false,
                    };
                if !ok {
                    return Err(invalid("invalid repetition count(s)"));
                }
                out.push('{');
                out.push_str(&body);
                out.push('}');
                i = j + 1;
            }
            '\\' => {
                let Some(&e) = chars.get(i) else { return Err(invalid("invalid escape \\ sequence")) };
                i += 1;
                match e {
                    'm' => out.push_str(r"\b{start}"),
                    'M' => out.push_str(r"\b{end}"),
                    'y' => out.push_str(r"\b"),
                    'Y' => out.push_str(r"\B"),
                    'Z' => out.push_str(r"\z"),
                    '1'..='9' => {
                        out.push('\\');
                        out.push(e);
                        *backrefs = true;
                    }
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            _ => out.push(c),
        }
    }
    if in_bracket {
        return Err(invalid("brackets [] not balanced"));
    }
    if depth != 0 {
        return Err(invalid("parentheses () not balanced"));
    }
    Ok(out)
}

/// Compile a pattern with its flags (PostgreSQL's ARE defaults: '.'
/// matches newlines, '^' and '$' only at the ends).
pub fn compile(pattern: &str, flags: &str) -> Result<Pattern> {
    let f = parse_flags(flags)?;
    let mut backrefs = false;
    let body = if f.quote { regex::escape(pattern) } else { translate(pattern, &mut backrefs)? };
    let mut inline = String::new();
    if f.icase {
        inline.push('i');
    }
    if !f.newline_dot {
        inline.push('s');
    }
    if f.newline_anchor {
        inline.push('m');
    }
    if f.expanded {
        inline.push('x');
    }
    let full = if inline.is_empty() { body } else { format!("(?{inline}){body}") };
    if backrefs {
        // fancy_regex spells word starts and ends as lookarounds.
        let full = full.replace(r"\b{start}", r"\b(?=\w)").replace(r"\b{end}", r"\b(?<=\w)");
        let re = fancy_regex::RegexBuilder::new(&full)
            .backtrack_limit(1_000_000)
            .build()
            .map_err(|e| invalid(&e.to_string().lines().last().unwrap_or("syntax error").trim().to_string()))?;
        return Ok(Pattern { re: Re::Backtracking(re), global: f.global });
    }
    let re = regex::RegexBuilder::new(&full).size_limit(1 << 24).build().map_err(|e| match e {
        regex::Error::CompiledTooBig(_) => invalid("regular expression is too complex"),
        other => invalid(&other.to_string().lines().last().unwrap_or("syntax error").trim().to_string()),
    })?;
    Ok(Pattern { re: Re::Fast(re), global: f.global })
}

/// Patterns compiled for one call: a constant pattern once, a column's
/// patterns as they change.
struct Cache {
    last: RefCell<Option<(String, String, std::rc::Rc<Pattern>)>>,
}

impl Cache {
    fn new() -> Cache {
        Cache { last: RefCell::new(None) }
    }
    fn get(&self, pattern: &str, flags: &str) -> Result<std::rc::Rc<Pattern>> {
        if let Some((p, f, re)) = self.last.borrow().as_ref() {
            if p == pattern && f == flags {
                return Ok(re.clone());
            }
        }
        let re = std::rc::Rc::new(compile(pattern, flags)?);
        *self.last.borrow_mut() = Some((pattern.to_string(), flags.to_string(), re.clone()));
        Ok(re)
    }
}

/// One match: byte spans of the whole match and of each group.
type Spans = Vec<Option<(usize, usize)>>;

/// The matches of `re` in `s` from byte `start`, as PostgreSQL's loop finds
/// them: each search starts where the last match ended, one character
/// further after an empty match. `degenerate`: drop empty matches at the
/// start, at the end and right after a match (the split functions).
fn matches(re: &Re, s: &str, start: usize, global: bool, degenerate: bool, mut each: impl FnMut(&Spans) -> bool) -> Result<()> {
    let mut at = start;
    let mut prev_end = start;
    while at <= s.len() {
        let Some(spans) = re.spans_at(s, at)? else { break };
        let Some(Some((m_start, m_end))) = spans.first().copied() else { break };
        let keep = !degenerate || (m_start < s.len() && m_end > prev_end);
        if keep && !each(&spans) {
            return Ok(());
        }
        prev_end = m_end;
        if !global {
            break;
        }
        at = m_end;
        if m_start == m_end {
            match s[at..].chars().next() {
                Some(ch) => at += ch.len_utf8(),
                None => break,
            }
        }
    }
    Ok(())
}

/// Byte offset of character `k` (0-based), or None past the end.
fn byte_at(s: &str, k: usize) -> Option<usize> {
    if k == 0 {
        return Some(0);
    }
    let mut n = 0;
    for (b, _) in s.char_indices() {
        if n == k {
            return Some(b);
        }
        n += 1;
    }
    (n == k).then_some(s.len())
}

fn chars_before(s: &str, b: usize) -> i64 {
    s[..b].chars().count() as i64
}

fn bad_param(name: &str, v: i64) -> WeirError {
    err!(InvalidParameterValue, "invalid value for parameter \"{name}\": {v}")
}

fn no_global(func: &str) -> WeirError {
    err!(InvalidParameterValue, "{func}() does not support the \"global\" option")
}

/// Text argument `j` at row `i`; None when it is NULL or absent (absent
/// arguments take `default`).
fn text_arg<'a>(a: &'a Args<'_>, j: usize, i: usize, default: &'a str) -> Result<Option<&'a str>> {
    if j >= a.len() {
        return Ok(Some(default));
    }
    Ok(a.str(j)?.get(i))
}

fn int_arg(a: &Args<'_>, j: usize, i: usize, default: i64) -> Result<Option<i64>> {
    if j >= a.len() {
        return Ok(Some(default));
    }
    Ok(a.i64(j)?.get(i))
}

/// The replacement text with `\1`..`\9` and `\&` substituted.
fn expand(rep: &str, s: &str, spans: &Spans, out: &mut String) {
    let mut it = rep.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.peek().copied() {
            Some(d @ '1'..='9') => {
                it.next();
                let k = d as usize - '0' as usize;
                if let Some(Some((a, b))) = spans.get(k) {
                    out.push_str(&s[*a..*b]);
                }
            }
            Some('&') => {
                it.next();
                if let Some(Some((a, b))) = spans.first() {
                    out.push_str(&s[*a..*b]);
                }
            }
            Some('\\') => {
                it.next();
                out.push('\\');
            }
            _ => out.push('\\'),
        }
    }
}

/// regexp_replace(source, pattern, replacement [, flags]) and
/// regexp_replace(source, pattern, replacement, start [, n [, flags]]).
pub fn regexp_replace(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    // The fourth argument is flags (text) or start (integer).
    let extended = a.len() >= 4 && a.types[3].is_integer();
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(s), Some(p), Some(rep)) = (a.str(0)?.get(i), a.str(1)?.get(i), a.str(2)?.get(i)) else {
            b.append_null();
            continue;
        };
        let (start, n, flags) = if extended {
            let (Some(start), Some(n), Some(flags)) = (int_arg(a, 3, i, 1)?, int_arg(a, 4, i, 1)?, text_arg(a, 5, i, "")?) else {
                b.append_null();
                continue;
            };
            (start, Some(n), flags)
        } else {
            let Some(flags) = text_arg(a, 3, i, "")? else {
                b.append_null();
                continue;
            };
            (1, None, flags)
        };
        if start <= 0 {
            return Err(bad_param("start", start));
        }
        if let Some(n) = n {
            if n < 0 {
                return Err(bad_param("n", n));
            }
        }
        let pat = cache.get(p, flags)?;
        // With start given, n defaults to 1 and 'g' is ignored: n = 0 replaces every match.
        let (global, nth) = match n {
            Some(0) => (true, 0),
            Some(n) => (false, n),
            None => (pat.global, 0),
        };
        let Some(from) = byte_at(s, start as usize - 1) else {
            b.append_value(s);
            continue;
        };
        let mut out = String::with_capacity(s.len());
        let mut pos = 0usize;
        let mut count = 0i64;
        matches(&pat.re, s, from, true, false, |spans| {
            count += 1;
            if nth > 0 && count < nth {
                return true;
            }
            let (so, eo) = spans[0].expect("the whole match");
            out.push_str(&s[pos..so]);
            expand(rep, s, spans, &mut out);
            pos = eo;
            global && nth == 0
        })?;
        out.push_str(&s[pos..]);
        a.ctx.check_alloc(out.len(), "regexp_replace()")?;
        b.append_value(out);
    }
    Ok(arc(b.finish()))
}

/// regexp_count(string, pattern [, start [, flags]]).
pub fn regexp_count(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = Int32Builder::with_capacity(a.n);
    for i in 0..a.n {
        let (Some(s), Some(p), Some(start), Some(flags)) =
            (a.str(0)?.get(i), a.str(1)?.get(i), int_arg(a, 2, i, 1)?, text_arg(a, 3, i, "")?)
        else {
            out.append_null();
            continue;
        };
        if start <= 0 {
            return Err(bad_param("start", start));
        }
        let pat = cache.get(p, flags)?;
        if pat.global {
            return Err(no_global("regexp_count"));
        }
        let mut n = 0;
        if let Some(from) = byte_at(s, start as usize - 1) {
            matches(&pat.re, s, from, true, false, |_| {
                n += 1;
                true
            })?;
        }
        out.append_value(n);
    }
    Ok(arc(out.finish()))
}

/// `text ~ pattern` (`~*`: case-insensitive).
pub fn regex_match(a: &Args<'_>, case_insensitive: bool) -> Result<ArrayRef> {
    let cache = Cache::new();
    let flags = if case_insensitive { "i" } else { "" };
    let (s, p) = (a.str(0)?, a.str(1)?);
    let mut out = BooleanBuilder::with_capacity(a.n);
    for i in 0..a.n {
        match (s.get(i), p.get(i)) {
            (Some(s), Some(p)) => out.append_value(cache.get(p, flags)?.re.is_match(s)?),
            _ => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

/// regexp_like(string, pattern [, flags]).
pub fn regexp_like(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = BooleanBuilder::with_capacity(a.n);
    for i in 0..a.n {
        let (Some(s), Some(p), Some(flags)) = (a.str(0)?.get(i), a.str(1)?.get(i), text_arg(a, 2, i, "")?) else {
            out.append_null();
            continue;
        };
        let pat = cache.get(p, flags)?;
        if pat.global {
            return Err(no_global("regexp_like"));
        }
        out.append_value(pat.re.is_match(s)?);
    }
    Ok(arc(out.finish()))
}

/// The `n`-th match from character `start`, for regexp_instr / regexp_substr.
fn nth_match(re: &Re, s: &str, start: i64, n: i64) -> Result<Option<Spans>> {
    let Some(from) = byte_at(s, start as usize - 1) else { return Ok(None) };
    let mut k = 0;
    let mut found = None;
    matches(re, s, from, true, false, |spans| {
        k += 1;
        if k == n {
            found = Some(spans.clone());
            return false;
        }
        true
    })?;
    Ok(found)
}

/// The byte span of group `sub` (0: the whole match) of the `n`-th match
/// of pattern `p` from character `start`, after the argument checks that
/// regexp_instr and regexp_substr share, in PostgreSQL's order (22023 for
/// each; `endoption` is regexp_instr's).
#[allow(clippy::too_many_arguments)]
fn nth_group(
    cache: &Cache,
    function: &str,
    s: &str,
    p: &str,
    flags: &str,
    start: i64,
    n: i64,
    endoption: Option<i64>,
    sub: i64,
) -> Result<Option<(usize, usize)>> {
    if start <= 0 {
        return Err(bad_param("start", start));
    }
    if n <= 0 {
        return Err(bad_param("n", n));
    }
    if let Some(e) = endoption.filter(|e| *e != 0 && *e != 1) {
        return Err(bad_param("endoption", e));
    }
    if sub < 0 {
        return Err(bad_param("subexpr", sub));
    }
    let pat = cache.get(p, flags)?;
    if pat.global {
        return Err(no_global(function));
    }
    Ok(nth_match(&pat.re, s, start, n)?.and_then(|spans| spans.get(sub as usize).copied().flatten()))
}

/// regexp_instr(string, pattern [, start [, n [, endoption [, flags [, subexpr]]]]]).
pub fn regexp_instr(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = Int32Builder::with_capacity(a.n);
    for i in 0..a.n {
        let (Some(s), Some(p)) = (a.str(0)?.get(i), a.str(1)?.get(i)) else {
            out.append_null();
            continue;
        };
        let (Some(start), Some(n), Some(endopt), Some(flags), Some(sub)) =
            (int_arg(a, 2, i, 1)?, int_arg(a, 3, i, 1)?, int_arg(a, 4, i, 0)?, text_arg(a, 5, i, "")?, int_arg(a, 6, i, 0)?)
        else {
            out.append_null();
            continue;
        };
        let pos = match nth_group(&cache, "regexp_instr", s, p, flags, start, n, Some(endopt), sub)? {
            Some((so, eo)) => 1 + chars_before(s, if endopt == 1 { eo } else { so }),
            None => 0,
        };
        out.append_value(pos as i32);
    }
    Ok(arc(out.finish()))
}

/// regexp_substr(string, pattern [, start [, n [, flags [, subexpr]]]]).
pub fn regexp_substr(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(s), Some(p)) = (a.str(0)?.get(i), a.str(1)?.get(i)) else {
            out.append_null();
            continue;
        };
        let (Some(start), Some(n), Some(flags), Some(sub)) =
            (int_arg(a, 2, i, 1)?, int_arg(a, 3, i, 1)?, text_arg(a, 4, i, "")?, int_arg(a, 5, i, 0)?)
        else {
            out.append_null();
            continue;
        };
        match nth_group(&cache, "regexp_substr", s, p, flags, start, n, None, sub)? {
            Some((so, eo)) => out.append_value(&s[so..eo]),
            None => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

/// A match as PostgreSQL's regexp_match returns it: the groups, or the
/// whole match when the pattern has none.
fn match_array(s: &str, spans: &Spans) -> String {
    let items: Vec<Option<String>> = if spans.len() == 1 {
        vec![spans[0].map(|(a, b)| s[a..b].to_string())]
    } else {
        spans[1..].iter().map(|g| g.map(|(a, b)| s[a..b].to_string())).collect()
    };
    format_array(&items)
}

/// Rows of (string, pattern [, flags]) to text through `f`; NULL in any
/// argument, or None from `f`, gives NULL.
fn text_rows(a: &Args<'_>, f: impl Fn(&str, &Pattern) -> Result<Option<String>>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(s), Some(p), Some(flags)) = (a.str(0)?.get(i), a.str(1)?.get(i), text_arg(a, 2, i, "")?) else {
            out.append_null();
            continue;
        };
        match f(s, &*cache.get(p, flags)?)? {
            Some(v) => out.append_value(v),
            None => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

/// regexp_match(string, pattern [, flags]) → text[] (NULL: no match).
pub fn regexp_match(a: &Args<'_>) -> Result<ArrayRef> {
    text_rows(a, |s, pat| {
        if pat.global {
            return Err(no_global("regexp_match").with_hint("Use the regexp_matches function instead."));
        }
        let mut found = None;
        matches(&pat.re, s, 0, false, false, |spans| {
            found = Some(match_array(s, spans));
            false
        })?;
        Ok(found)
    })
}

/// regexp_matches' rows for one string, as one array of array texts (the
/// binder unnests it into the set PostgreSQL returns).
pub fn regexp_matches_all(a: &Args<'_>) -> Result<ArrayRef> {
    text_rows(a, |s, pat| {
        let mut rows = Vec::new();
        matches(&pat.re, s, 0, pat.global, false, |spans| {
            rows.push(Some(match_array(s, spans)));
            true
        })?;
        let text = format_array(&rows);
        a.ctx.check_alloc(text.len(), "regexp_matches()")?;
        Ok(Some(text))
    })
}

/// regexp_split_to_array(string, pattern [, flags]); regexp_split_to_table
/// is its unnest.
pub fn regexp_split_to_array(a: &Args<'_>) -> Result<ArrayRef> {
    text_rows(a, |s, pat| {
        if pat.global {
            let name = if a.name == "regexp_split_to_table_array" { "regexp_split_to_table" } else { "regexp_split_to_array" };
            return Err(no_global(name));
        }
        let mut parts = Vec::new();
        let mut pos = 0usize;
        matches(&pat.re, s, 0, true, true, |spans| {
            let (so, eo) = spans[0].expect("the whole match");
            parts.push(Some(s[pos..so].to_string()));
            pos = eo;
            true
        })?;
        parts.push(Some(s[pos..].to_string()));
        let text = format_array(&parts);
        a.ctx.check_alloc(text.len(), "regexp_split_to_array()")?;
        Ok(Some(text))
    })
}

/// substring(string from pattern): the first match, or its first
/// parenthesized group's text when the pattern has groups.
pub fn substring_regex(a: &Args<'_>) -> Result<ArrayRef> {
    text_rows(a, |s, pat| {
        let mut found = None;
        matches(&pat.re, s, 0, false, false, |spans| {
            found = if spans.len() > 1 { spans[1] } else { spans[0] };
            false
        })?;
        Ok(found.map(|(so, eo)| s[so..eo].to_string()))
    })
}

/// PostgreSQL's `similar_to_escape`: a SIMILAR TO pattern as an ARE
/// anchored at both ends. `escape` None: no escape character. Within the
/// first and second escape-double-quote separators lies the part
/// `substring(… similar …)` returns; the parts around it match
/// non-greedily.
pub fn similar_to_regex(pat: &str, escape: Option<char>) -> Result<String> {
    let mut out = String::from("^(?U:");
    let mut nquotes = 0;
    let mut after_escape = false;
    let mut in_bracket = 0; // 0: outside; 1: just opened; 2: after ^; 3: inside.
    for c in pat.chars() {
        if after_escape {
            if c == '"' && in_bracket == 0 {
                // The separators: a lazy first part, the greedy group
                // substring returns, a lazy last part (PostgreSQL writes
                // `(?:…){1,1}?(…){1,1}(?:…)`, lazy in Spencer's engine).
                match nquotes {
                    0 => out.push_str(")("),
                    1 => out.push_str(")(?U:"),
                    _ => bail!(
                        InvalidUseOfEscapeCharacter,
                        "SQL regular expression may not contain more than two escape-double-quote separators"
                    ),
                }
                nquotes += 1;
            } else {
                out.push('\\');
                out.push(c);
            }
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_bracket > 0 {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            match (in_bracket, c) {
                (1, '^') => in_bracket = 2,
                (1 | 2, ']') => in_bracket = 3,
                (_, ']') => in_bracket = 0,
                _ => in_bracket = 3,
            }
        } else if c == '[' {
            out.push(c);
            in_bracket = 1;
        } else if c == '%' {
            out.push_str(".*");
        } else if c == '_' {
            out.push('.');
        } else if c == '(' {
            // Groups stay non-capturing, so only the separators' part is a group.
            out.push_str("(?:");
        } else if matches!(c, '\\' | '.' | '^' | '$') {
            out.push('\\');
            out.push(c);
        } else {
            out.push(c);
        }
    }
    // A trailing escape character escapes nothing and is dropped, as in
    // PostgreSQL 15 (`'a' SIMILAR TO 'a#' ESCAPE '#'` is true).
    out.push_str(")$");
    Ok(out)
}

/// The escape character of SIMILAR TO / substring(similar): one character,
/// or empty for none (22025 otherwise).
pub fn similar_escape(e: &str) -> Result<Option<char>> {
    let mut it = e.chars();
    match (it.next(), it.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(err!(InvalidEscapeSequence, "invalid escape string").with_hint("Escape string must be empty or one character.")),
    }
}

/// `similar_to_escape(pattern [, escape])`: the regex SIMILAR TO runs (the
/// binder feeds it to `~`); NULL escape gives NULL.
pub fn similar_to_escape(a: &Args<'_>) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(p), Some(e)) = (a.str(0)?.get(i), text_arg(a, 1, i, "\\")?) else {
            out.append_null();
            continue;
        };
        out.append_value(similar_to_regex(p, similar_escape(e)?)?);
    }
    Ok(arc(out.finish()))
}

/// substring(string similar pattern escape e): the part between the
/// separators, NULL without a match.
pub fn substring_similar(a: &Args<'_>) -> Result<ArrayRef> {
    let cache = Cache::new();
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(s), Some(p), Some(e)) = (a.str(0)?.get(i), a.str(1)?.get(i), a.str(2)?.get(i)) else {
            out.append_null();
            continue;
        };
        let re = similar_to_regex(p, similar_escape(e)?)?;
        let pat = cache.get(&re, "")?;
        match pat.re.spans_at(s, 0)? {
            Some(sp) => match sp.get(1).copied().flatten().or_else(|| sp.first().copied().flatten()) {
                Some((a, b)) => out.append_value(&s[a..b]),
                None => out.append_null(),
            },
            None => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &str, flags: &str, s: &str) -> Vec<String> {
        let pat = compile(p, flags).unwrap();
        let mut v = Vec::new();
        matches(&pat.re, s, 0, pat.global, false, |sp| {
            v.push(match_array(s, sp));
            true
        })
        .unwrap();
        v
    }

    #[test]
    fn flags_and_errors() {
        assert_eq!(all("(bar)(beque)", "i", "foObARbEqUEbAz"), vec!["{bAR,bEqUE}"]);
        assert_eq!(all("(b[^b]+)(b[^b]+)", "g", "foobarbequebazilbarfbonk"), vec!["{bar,beque}", "{bazil,barf}"]);
        assert_eq!(all("^", "mg", "foo\nbar\nbequq\nbaz").len(), 4);
        assert_eq!(compile("a", "z").err().unwrap().message, "invalid regular expression option: \"z\"");
        assert_eq!(compile("(a", "").err().unwrap().kind.sqlstate(), "2201B");
        assert_eq!(compile("(a){2,1}", "").err().unwrap().message, "invalid regular expression: invalid repetition count(s)");
        // PostgreSQL's '.' matches a newline unless 'n' is given.
        assert!(compile("a.d", "").unwrap().re.is_match("a\nd").unwrap());
        assert!(!compile("a.d", "n").unwrap().re.is_match("a\nd").unwrap());
        assert!(compile(r"\mfoo\M", "").unwrap().re.is_match("a foo b").unwrap());
    }

    #[test]
    fn similar_to_patterns() {
        let m = |p: &str, e: Option<char>, s: &str| Regex::new(&similar_to_regex(p, e).unwrap()).unwrap().is_match(s);
        assert!(m("_bcd%", Some('\\'), "abcdefg"));
        assert!(!m("bcd%", Some('\\'), "abcdefg"));
        assert!(m("_bcd#%", Some('#'), "abcd%"));
        assert!(m("_bcd\\%", None, "abcd\\efg"));
        assert!(m("a|b%", Some('\\'), "bcd"));
        assert!(similar_to_regex("a#\"b#\"c#\"d", Some('#')).is_err());
        assert!(m("a#", Some('#'), "a"));
        assert!(!m("a\\", Some('\\'), "a\\"));
    }
}
