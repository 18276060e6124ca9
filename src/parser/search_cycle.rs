//! PostgreSQL's `SEARCH` and `CYCLE` clauses of a recursive WITH query, which sqlparser 0.64
//! lacks, taught on the token stream before sqlparser parses it:
//!
//! ```text
//! name [(cols)] AS (query) [SEARCH {DEPTH | BREADTH} FIRST BY col, ... SET seq_col]
//!                          [CYCLE col, ... SET mark_col [TO value DEFAULT value] USING path_col]
//! ```
//!
//! sqlparser's `Cte` has no place for them, but it keeps a `FROM ident` after the query's
//! closing parenthesis: the clauses' tokens become `FROM "weir_search_cycle …"`, a quoted
//! name holding the clauses' text, which `Display` writes back (views keep it) and the
//! planner reads with [`cte_clauses`]. A clause this grammar does not take (a TO value that
//! is not one literal, say) is left alone for sqlparser to refuse.
//!
//! Imports only sqlparser and `error` (below everything, like the rest of the parser).

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use super::is_word;
use crate::error::{Result, WeirError};
use crate::{bail, err};

/// The marker's prefix inside the quoted name.
const MARKER: &str = "weir_search_cycle ";

/// `SEARCH {DEPTH | BREADTH} FIRST BY cols SET column`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchClause {
    pub breadth_first: bool,
    pub by: Vec<String>,
    pub set: String,
}

/// `CYCLE cols SET mark [TO value DEFAULT value] USING path`.
#[derive(Debug, Clone, PartialEq)]
pub struct CycleClause {
    pub columns: Vec<String>,
    pub mark: String,
    /// The mark's values for a cycle and otherwise (TRUE and FALSE when not written).
    pub value: ast::Expr,
    pub default: ast::Expr,
    pub path: String,
}

/// A WITH query's SEARCH and CYCLE clauses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchCycle {
    pub search: Option<SearchClause>,
    pub cycle: Option<CycleClause>,
}

fn is_name(t: &Token) -> bool {
    matches!(t, Token::Word(_))
}

/// The token stream with every SEARCH / CYCLE clause after a `)` turned into the marker.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(&t.token, "search") || is_word(&t.token, "cycle")) {
        return tokens;
    }
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    // (first, end) significant positions of each clause run to replace.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut s = 1;
    while s < sig.len() {
        if *tok(s - 1) == Token::RParen && (is_word(tok(s), "search") || is_word(tok(s), "cycle")) {
            let start = s;
            let mut at = s;
            let mut ok = true;
            let mut seen_search = false;
            let mut seen_cycle = false;
            while ok && (is_word(tok(at), "search") && !seen_search || is_word(tok(at), "cycle") && !seen_cycle) {
                let next = if is_word(tok(at), "search") {
                    seen_search = true;
                    search_end(&tok, at)
                } else {
                    seen_cycle = true;
                    cycle_end(&tok, at)
                };
                match next {
                    Some(n) => at = n,
                    None => ok = false,
                }
            }
            if ok {
                runs.push((start, at));
                s = at;
                continue;
            }
        }
        s += 1;
    }
    if runs.is_empty() {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut run = 0;
    let mut i = 0;
    while i < tokens.len() {
        if let Some(&(first, end)) = runs.get(run) {
            if i == sig[first] {
                let text: Vec<String> = (first..end).map(|k| tok(k).to_string()).collect();
                let span = tokens[i].span;
                for t in [
                    Token::make_keyword("FROM"),
                    Token::Whitespace(Whitespace::Space),
                    Token::make_word(&format!("{MARKER}{}", text.join(" ")), Some('"')),
                    Token::Whitespace(Whitespace::Space),
                ] {
                    out.push(TokenWithSpan::new(t, span));
                }
                i = sig.get(end).copied().unwrap_or(tokens.len());
                run += 1;
                continue;
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Past `name (, name)*` starting at `s`.
fn names_end<'a>(tok: &impl Fn(usize) -> &'a Token, mut s: usize) -> Option<usize> {
    if !is_name(tok(s)) {
        return None;
    }
    s += 1;
    while *tok(s) == Token::Comma {
        if !is_name(tok(s + 1)) {
            return None;
        }
        s += 2;
    }
    Some(s)
}

/// Past `SEARCH {DEPTH | BREADTH} FIRST BY names SET name`, from `s` at SEARCH.
fn search_end<'a>(tok: &impl Fn(usize) -> &'a Token, s: usize) -> Option<usize> {
    if !(is_word(tok(s + 1), "depth") || is_word(tok(s + 1), "breadth")) || !is_word(tok(s + 2), "first") || !is_word(tok(s + 3), "by") {
        return None;
    }
    let s = names_end(tok, s + 4)?;
    (is_word(tok(s), "set") && is_name(tok(s + 1))).then_some(s + 2)
}

/// A TO / DEFAULT value: one literal, optionally negative.
fn value_end<'a>(tok: &impl Fn(usize) -> &'a Token, s: usize) -> Option<usize> {
    match tok(s) {
        Token::Minus if matches!(tok(s + 1), Token::Number(..)) => Some(s + 2),
        Token::Number(..) | Token::SingleQuotedString(_) => Some(s + 1),
        t if is_word(t, "true") || is_word(t, "false") || is_word(t, "null") => Some(s + 1),
        _ => None,
    }
}

/// Past `CYCLE names SET name [TO value DEFAULT value] USING name`, from `s` at CYCLE.
fn cycle_end<'a>(tok: &impl Fn(usize) -> &'a Token, s: usize) -> Option<usize> {
    let s = names_end(tok, s + 1)?;
    if !is_word(tok(s), "set") || !is_name(tok(s + 1)) {
        return None;
    }
    let mut s = s + 2;
    if is_word(tok(s), "to") {
        s = value_end(tok, s + 1)?;
        if !is_word(tok(s), "default") {
            return None;
        }
        s = value_end(tok, s + 1)?;
    }
    (is_word(tok(s), "using") && is_name(tok(s + 1))).then_some(s + 2)
}

fn syntax(e: sqlparser::parser::ParserError) -> WeirError {
    err!(Syntax, "syntax error in a SEARCH or CYCLE clause: {e}")
}

/// Take the next token when it is the (non-keyword) word `w`.
fn next_word(p: &mut Parser, w: &str) -> bool {
    if is_word(&p.peek_token_ref().token, w) {
        p.next_token();
        true
    } else {
        false
    }
}

fn names(p: &mut Parser) -> Result<Vec<String>> {
    Ok(p.parse_comma_separated(|p| p.parse_identifier()).map_err(syntax)?.iter().map(name).collect())
}

/// An identifier as PostgreSQL folds it (unquoted: lowercase).
fn name(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// The SEARCH and CYCLE clauses a WITH query's marker carries (None: no marker).
pub fn cte_clauses(cte: &ast::Cte) -> Result<Option<SearchCycle>> {
    let Some(from) = &cte.from else { return Ok(None) };
    let Some(text) = from.value.strip_prefix(MARKER) else {
        bail!(Syntax, "syntax error at or near \"FROM\"");
    };
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(text).map_err(syntax)?;
    let mut out = SearchCycle::default();
    loop {
        if p.parse_keyword(Keyword::SEARCH) {
            let breadth_first = if next_word(&mut p, "breadth") {
                true
            } else if next_word(&mut p, "depth") {
                false
            } else {
                bail!(Syntax, "syntax error at or near \"{}\"", p.peek_token_ref().token);
            };
            p.expect_keywords(&[Keyword::FIRST, Keyword::BY]).map_err(syntax)?;
            let by = names(&mut p)?;
            p.expect_keyword(Keyword::SET).map_err(syntax)?;
            let set = name(&p.parse_identifier().map_err(syntax)?);
            out.search = Some(SearchClause { breadth_first, by, set });
        } else if p.parse_keyword(Keyword::CYCLE) {
            let columns = names(&mut p)?;
            p.expect_keyword(Keyword::SET).map_err(syntax)?;
            let mark = name(&p.parse_identifier().map_err(syntax)?);
            let (value, default) = if p.parse_keyword(Keyword::TO) {
                let v = p.parse_expr().map_err(syntax)?;
                p.expect_keyword(Keyword::DEFAULT).map_err(syntax)?;
                (v, p.parse_expr().map_err(syntax)?)
            } else {
                (ast::Expr::value(ast::Value::Boolean(true)), ast::Expr::value(ast::Value::Boolean(false)))
            };
            p.expect_keyword(Keyword::USING).map_err(syntax)?;
            let path = name(&p.parse_identifier().map_err(syntax)?);
            out.cycle = Some(CycleClause { columns, mark, value, default, path });
        } else {
            break;
        }
    }
    if p.peek_token_ref().token != Token::EOF {
        bail!(Syntax, "syntax error at or near \"{}\"", p.peek_token_ref().token);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctes(sql: &str) -> Vec<(String, Option<SearchCycle>)> {
        let stmts = crate::parser::parse(sql).unwrap();
        let crate::parser::Statement::Sql(ast::Statement::Query(q)) = &stmts[0] else { panic!("{stmts:?}") };
        q.with.as_ref().unwrap().cte_tables.iter().map(|c| (c.alias.name.value.clone(), cte_clauses(c).unwrap())).collect()
    }

    #[test]
    fn clauses_become_markers_and_parse_back() {
        let sql = "with recursive g(f, t) as (select 1, 2 union all select t, f from g) \
                   search depth first by f, t set seq cycle f, T set is_cycle to 'Y' default 'N' using path, \
                   h as (select 1) select * from g";
        let got = ctes(sql);
        let sc = got[0].1.clone().unwrap();
        assert_eq!(sc.search, Some(SearchClause { breadth_first: false, by: vec!["f".into(), "t".into()], set: "seq".into() }));
        let c = sc.cycle.unwrap();
        assert_eq!((c.columns, c.mark.as_str(), c.path.as_str()), (vec!["f".to_string(), "t".to_string()], "is_cycle", "path"));
        assert_eq!(c.value.to_string(), "'Y'");
        assert_eq!(got[1], ("h".into(), None));
        // The printed statement parses to the same clauses (stored views).
        let printed = crate::parser::parse(sql).unwrap()[0].to_string();
        assert_eq!(ctes(&printed)[0].1, got[0].1);
        let got = ctes("with recursive a as (select 1 as b union all select * from a) cycle b set c using p select * from a");
        let c = got[0].1.clone().unwrap().cycle.unwrap();
        assert_eq!(c.default.to_string(), "false");
        let got = ctes("with recursive a as (select 1 as b union all select b + 1 from a) search breadth first by b set s select * from a");
        assert!(got[0].1.clone().unwrap().search.unwrap().breadth_first);
    }

    #[test]
    fn other_forms_stay_errors() {
        assert!(crate::parser::parse("with recursive a as (select 1) cycle b set c to point '(1,1)' default 0 using p select 1").is_err());
        assert!(crate::parser::parse("select (1) search").is_ok());
    }
}
