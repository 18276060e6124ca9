//! CREATE AGGREGATE's support functions written with their argument types,
//! `SFUNC = int4_sum(int8, int4)`: PostgreSQL's grammar reads the option's
//! value as a type name whose "modifiers" are the argument list and keeps
//! only the name, so the parenthesized list is dropped from the tokens
//! before sqlparser (which takes an object name only) sees them.
//!
//! Imports only sqlparser's tokens.

use super::is_word;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The options whose value names a function.
const FUNCTION_OPTIONS: &[&str] = &["sfunc", "finalfunc", "combinefunc", "serialfunc", "deserialfunc", "msfunc", "minvfunc", "mfinalfunc"];

/// Drop `( … )` after `OPTION = name[.name]` inside a CREATE [OR REPLACE]
/// AGGREGATE statement.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(&t.token, "aggregate")) {
        return tokens;
    }
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    let mut drop = vec![false; tokens.len()];
    let mut in_aggregate = false;
    let mut stmt_start = 0;
    let mut s = 0;
    while s < sig.len() {
        if *tok(s) == Token::SemiColon {
            in_aggregate = false;
            stmt_start = s + 1;
        } else if s == stmt_start && is_word(tok(s), "create") {
            let mut k = s + 1;
            if is_word(tok(k), "or") && is_word(tok(k + 1), "replace") {
                k += 2;
            }
            in_aggregate = is_word(tok(k), "aggregate");
        }
        if in_aggregate && FUNCTION_OPTIONS.iter().any(|o| is_word(tok(s), o)) && *tok(s + 1) == Token::Eq {
            // name, then any `.name` parts, then the argument list.
            let mut k = s + 2;
            if matches!(tok(k), Token::Word(_)) {
                k += 1;
                while *tok(k) == Token::Period && matches!(tok(k + 1), Token::Word(_)) {
                    k += 2;
                }
                if *tok(k) == Token::LParen {
                    let mut depth = 0usize;
                    let mut end = k;
                    while end < sig.len() {
                        match tok(end) {
                            Token::LParen => depth += 1,
                            Token::RParen => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            Token::SemiColon | Token::EOF => break,
                            _ => {}
                        }
                        end += 1;
                    }
                    if *tok(end) == Token::RParen {
                        for d in &mut drop[sig[k]..=sig[end]] {
                            *d = true;
                        }
                        s = end + 1;
                        continue;
                    }
                }
            }
        }
        s += 1;
    }
    if !drop.contains(&true) {
        return tokens;
    }
    tokens.into_iter().zip(drop).filter(|(_, d)| !d).map(|(t, _)| t).collect()
}

#[cfg(test)]
mod tests {
    use crate::parser::{parse, Statement};

    #[test]
    fn function_options_with_argument_types() {
        let sql = "CREATE AGGREGATE balk(int4) (SFUNC = int4_sum(int8, int4), STYPE = int8, \
                   COMBINEFUNC = public.balkifnull(int8, int8), PARALLEL = SAFE, INITCOND = '0')";
        let stmts = parse(sql).unwrap();
        let Statement::Sql(s) = &stmts[0] else { panic!("not sqlparser's statement") };
        let text = s.to_string();
        assert!(text.contains("SFUNC = int4_sum,"), "{text}");
        assert!(text.contains("COMBINEFUNC = public.balkifnull,"), "{text}");
        // Elsewhere parentheses stay.
        assert!(parse("SELECT sfunc(1) FROM t").is_ok());
    }
}
