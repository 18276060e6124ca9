//! PostgreSQL lexical forms sqlparser 0.64 lacks, taught on the token stream before
//! sqlparser parses it (as `window_frame.rs` does for frames):
//!
//! - Unicode escapes: `U&'d\0061t'` and `U&"d\0061t"`, each with an optional
//!   `UESCAPE 'c'`. The dialect tokenizes `U&'…'` as the word `U`, `&` and a plain string
//!   (sqlparser's own U& literal cannot take UESCAPE); written without spaces between them,
//!   the three (five with UESCAPE) become one string or quoted identifier, decoded as
//!   PostgreSQL's scanner does (`\XXXX`, `\+XXXXXX`, surrogate pairs, `\\`).
//! - `ORDER BY x USING <` / `USING >`: ascending / descending (the operators of the type's
//!   default btree class, the only ones weir sorts by).
//! - `f(a, VARIADIC arr)`: the last argument is wrapped as `weir_variadic(arr)`, a marker
//!   the binder spreads into separate arguments (`bind.rs`).
//! - `t.*::type`: a cast of t's whole row, written `t::type` (t's name alone is its row).
//!
//! Imports only sqlparser (below `error`, like the rest of the parser).

use super::is_word;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The VARIADIC marker function's name (lowercase, unquoted).
pub const VARIADIC_MARKER: &str = "weir_variadic";

/// A PostgreSQL Unicode-escaped body decoded with escape character `esc`; Err is
/// PostgreSQL's message.
pub fn decode_unicode_escapes(body: &str, esc: char) -> Result<String, String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    let mut pending_high: Option<u32> = None;
    let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| -> Result<u32, String> {
        let mut v = 0u32;
        for _ in 0..n {
            let d = chars.next().and_then(|c| c.to_digit(16)).ok_or_else(|| "invalid Unicode escape".to_string())?;
            v = v * 16 + d;
        }
        Ok(v)
    };
    while let Some(c) = chars.next() {
        if c != esc {
            if pending_high.is_some() {
                return Err("invalid Unicode surrogate pair".into());
            }
            out.push(c);
            continue;
        }
        let code = match chars.peek() {
            Some(&n) if n == esc => {
                chars.next();
                if pending_high.is_some() {
                    return Err("invalid Unicode surrogate pair".into());
                }
                out.push(esc);
                continue;
            }
            Some('+') => {
                chars.next();
                hex(&mut chars, 6)?
            }
            _ => hex(&mut chars, 4)?,
        };
        if let Some(high) = pending_high.take() {
            if !(0xDC00..=0xDFFF).contains(&code) {
                return Err("invalid Unicode surrogate pair".into());
            }
            let full = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00);
            out.push(char::from_u32(full).ok_or_else(|| "invalid Unicode escape value".to_string())?);
        } else if (0xD800..=0xDBFF).contains(&code) {
            pending_high = Some(code);
        } else if (0xDC00..=0xDFFF).contains(&code) || code == 0 {
            return Err("invalid Unicode surrogate pair".into());
        } else {
            out.push(char::from_u32(code).ok_or_else(|| "invalid Unicode escape value".to_string())?);
        }
    }
    if pending_high.is_some() {
        return Err("invalid Unicode surrogate pair".into());
    }
    Ok(out)
}

/// A valid UESCAPE character: one character, not a hex digit, `+`, `'`, `"` or white space.
fn valid_uescape(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    if it.next().is_some() || c.is_ascii_hexdigit() || matches!(c, '+' | '\'' | '"') || c.is_whitespace() {
        return None;
    }
    Some(c)
}

/// A comment between two string constants continued across a newline: PostgreSQL's
/// scanner ends the first constant there, so the second is a syntax error (sqlparser would
/// join them, as it skips comments with white space).
fn comment_in_continuation(tokens: &[TokenWithSpan]) -> Result<(), ParserError> {
    for (i, t) in tokens.iter().enumerate() {
        if !matches!(t.token, Token::SingleQuotedString(_)) {
            continue;
        }
        let (mut newline, mut comment) = (false, false);
        for next in &tokens[i + 1..] {
            match &next.token {
                Token::Whitespace(Whitespace::Newline) => newline = true,
                Token::Whitespace(Whitespace::SingleLineComment { .. }) => {
                    comment = true;
                    newline = true;
                }
                Token::Whitespace(Whitespace::MultiLineComment(_)) => comment = true,
                Token::Whitespace(_) => {}
                Token::SingleQuotedString(_) if newline && comment => {
                    let at = next.span.start;
                    return Err(ParserError::ParserError(format!(
                        "string constants continued across a comment at Line: {}, Column: {}",
                        at.line, at.column
                    )));
                }
                _ => break,
            }
        }
    }
    Ok(())
}

/// The token stream with the forms above rewritten; Err for a malformed Unicode escape or a
/// comment inside a string continuation (syntax errors in PostgreSQL). Streams without them
/// come back as they were.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, ParserError> {
    comment_in_continuation(&tokens)?;
    let tokens = whole_row_casts(tokens);
    let relevant = tokens.iter().any(|t| is_word(&t.token, "u") || is_word(&t.token, "using") || is_word(&t.token, "variadic"));
    if !relevant {
        return Ok(tokens);
    }
    let tokens = unicode_escapes(tokens).map_err(ParserError::TokenizerError)?;
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    // (token index, replacement tokens); an empty replacement removes the token.
    let mut replace: Vec<(usize, Vec<Token>)> = Vec::new();
    let mut insert_before: Vec<(usize, Token)> = Vec::new();
    for s in 0..sig.len() {
        if is_word(tok(s), "using") {
            let dir = match tok(s + 1) {
                Token::Lt => "ASC",
                Token::Gt => "DESC",
                _ => continue,
            };
            replace.push((sig[s], vec![Token::make_keyword(dir)]));
            replace.push((sig[s + 1], vec![]));
        }
        // `( … , VARIADIC x )` inside a call: `f(` is a word and a parenthesis.
        if is_word(tok(s), "variadic") && s > 0 && matches!(tok(s - 1), Token::LParen | Token::Comma) {
            let Some(open) = enclosing_open(&tok, s) else { continue };
            if open == 0 || !matches!(tok(open - 1), Token::Word(_)) || declares_routine(&tok, open - 1) {
                continue;
            }
            let Some(end) = argument_end(&tok, s + 1) else { continue };
            replace.push((sig[s], vec![Token::make_word(VARIADIC_MARKER, None), Token::LParen]));
            insert_before.push((sig[end], Token::RParen));
        }
    }
    if replace.is_empty() && insert_before.is_empty() {
        return Ok(tokens);
    }
    let mut out = Vec::with_capacity(tokens.len() + 4);
    for (i, t) in tokens.into_iter().enumerate() {
        for (_, x) in insert_before.iter().filter(|(at, _)| *at == i) {
            out.push(TokenWithSpan::new(x.clone(), t.span));
        }
        if let Some((_, r)) = replace.iter().find(|(at, _)| *at == i) {
            for x in r {
                out.push(TokenWithSpan::new(x.clone(), t.span));
                out.push(TokenWithSpan::new(Token::Whitespace(Whitespace::Space), t.span));
            }
        } else {
            out.push(t);
        }
    }
    Ok(out)
}

/// `t.*::type` (a cast of t's whole row, which sqlparser cannot parse) becomes
/// `t::type`: a relation's name alone is its whole row too.
fn whole_row_casts(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| t.token == Token::DoubleColon) {
        return tokens;
    }
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    let mut drop = vec![false; tokens.len()];
    for s in 0..sig.len() {
        if matches!(tok(s), Token::Word(_))
            && *tok(s + 1) == Token::Period
            && *tok(s + 2) == Token::Mul
            && *tok(s + 3) == Token::DoubleColon
        {
            drop[sig[s + 1]] = true;
            drop[sig[s + 2]] = true;
        }
    }
    if !drop.contains(&true) {
        return tokens;
    }
    tokens.into_iter().zip(drop).filter(|(_, d)| !d).map(|(t, _)| t).collect()
}

/// Whether the name at `name` is a routine being declared or named by its signature
/// (`CREATE FUNCTION f(VARIADIC a int[])`, `DROP AGGREGATE s.f(…)`), not a call.
fn declares_routine<'a>(tok: &impl Fn(usize) -> &'a Token, name: usize) -> bool {
    let before = if name >= 2 && *tok(name - 1) == Token::Period { name.checked_sub(3) } else { name.checked_sub(1) };
    before.is_some_and(|b| ["function", "procedure", "aggregate", "routine"].iter().any(|w| is_word(tok(b), w)))
}

/// The `(` whose parentheses hold significant token `s`.
fn enclosing_open<'a>(tok: &impl Fn(usize) -> &'a Token, s: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut k = s;
    while k > 0 {
        k -= 1;
        match tok(k) {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return Some(k),
            Token::LParen => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The `)` ending the argument that starts at `s` (a comma after it: not the last argument,
/// which VARIADIC must be — left to sqlparser's error).
fn argument_end<'a>(tok: &impl Fn(usize) -> &'a Token, mut s: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match tok(s) {
            Token::EOF | Token::SemiColon => return None,
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen if depth == 0 => return Some(s),
            Token::RParen | Token::RBracket => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => return None,
            _ => {}
        }
        s += 1;
    }
}

/// `U&'…'` / `U&"…"` [UESCAPE '…'] written without spaces: one string or quoted identifier.
/// Whether the tokens hold a `U&'…'` string constant (not a `U&"…"` identifier).
pub fn has_unicode_string(tokens: &[TokenWithSpan]) -> bool {
    tokens
        .windows(3)
        .any(|w| is_word(&w[0].token, "u") && w[1].token == Token::Ampersand && matches!(w[2].token, Token::SingleQuotedString(_)))
}

fn unicode_escapes(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, String> {
    let starts = |i: usize| {
        is_word(&tokens[i].token, "u")
            && tokens.get(i + 1).is_some_and(|t| t.token == Token::Ampersand)
            && tokens.get(i + 2).is_some_and(|t| {
                matches!(&t.token, Token::SingleQuotedString(_)) || matches!(&t.token, Token::Word(w) if w.quote_style == Some('"'))
            })
    };
    if !(0..tokens.len()).any(starts) {
        return Ok(tokens);
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if !starts(i) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let span = tokens[i].span;
        let mut next = i + 3;
        // Optional `UESCAPE 'c'` after white space.
        let mut esc = '\\';
        let mut k = next;
        while tokens.get(k).is_some_and(|t| matches!(t.token, Token::Whitespace(_))) {
            k += 1;
        }
        if tokens.get(k).is_some_and(|t| is_word(&t.token, "uescape")) {
            let mut m = k + 1;
            while tokens.get(m).is_some_and(|t| matches!(t.token, Token::Whitespace(_))) {
                m += 1;
            }
            match tokens.get(m).map(|t| &t.token) {
                Some(Token::SingleQuotedString(c)) => {
                    esc = valid_uescape(c).ok_or_else(|| "invalid Unicode escape character".to_string())?;
                    next = m + 1;
                }
                _ => return Err("UESCAPE must be followed by a simple string literal".into()),
            }
        }
        let token = match &tokens[i + 2].token {
            Token::SingleQuotedString(body) => Token::SingleQuotedString(decode_unicode_escapes(body, esc)?),
            Token::Word(w) => {
                let value = decode_unicode_escapes(&w.value, esc)?;
                if value.is_empty() {
                    return Err("zero-length delimited identifier".into());
                }
                Token::make_word(&value, Some('"'))
            }
            _ => unreachable!("checked by starts"),
        };
        out.push(TokenWithSpan::new(token, span));
        i = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_unicode_escapes() {
        assert_eq!(decode_unicode_escapes(r"d\0061t\+000061", '\\').unwrap(), "data");
        assert_eq!(decode_unicode_escapes(r"d!0061t\+000061", '!').unwrap(), r"dat\+000061");
        assert_eq!(decode_unicode_escapes(r"a\\b", '\\').unwrap(), r"a\b");
        assert_eq!(decode_unicode_escapes(r"\D83D\DE00", '\\').unwrap(), "\u{1F600}");
        assert!(decode_unicode_escapes(r"\D83D", '\\').is_err());
        assert!(decode_unicode_escapes(r"\00", '\\').is_err());
        assert!(decode_unicode_escapes(r"\", '\\').is_err());
        assert_eq!(valid_uescape("!"), Some('!'));
        assert_eq!(valid_uescape("a"), None);
        assert_eq!(valid_uescape("+"), None);
    }
}
