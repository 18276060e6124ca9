//! The nesting limit: a statement whose expressions or subqueries nest
//! deeper than `NESTING_DEPTH_MAX` is refused with 54001 (`stack depth
//! limit exceeded`, as PostgreSQL) before the planner and executor, which
//! recurse over it, can overflow a worker's stack and abort the process.
//!
//! Works on sqlparser's tokens and AST (with its visitor); imports only
//! `error`.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Query, Visit, Visitor};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{ErrorKind, WeirError};

type Result<T> = std::result::Result<T, WeirError>;

/// Deepest nesting of expressions and queries accepted. PostgreSQL's own
/// limit comes from its 2 MB stack (`1 + 1 + …` fails near 5,000 terms);
/// 1,000 leaves room in weir's debug builds on 64 MiB worker stacks (a
/// guess checked by tests/sql_fuzz.rs's deep statements, not tuned).
pub const NESTING_DEPTH_MAX: usize = 1000;

struct Depth {
    now: usize,
}

impl Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
        self.enter()
    }
    fn post_visit_expr(&mut self, _e: &Expr) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.enter()
    }
    fn post_visit_query(&mut self, _q: &Query) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

impl Depth {
    fn enter(&mut self) -> ControlFlow<()> {
        self.now += 1;
        if self.now > NESTING_DEPTH_MAX {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// 54001 when the text's parentheses or CASE … END nest deeper than
/// `NESTING_DEPTH_MAX`, found on tokens: sqlparser's recursive descent gets
/// very slow on such input long before its own recursion limit stops it.
pub fn check_tokens(sql: &str, tokens: &[TokenWithSpan]) -> Result<()> {
    // Nesting past the limit needs at least one byte per level.
    if sql.len() <= NESTING_DEPTH_MAX {
        return Ok(());
    }
    let mut depth: usize = 0;
    for t in tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::Word(w) if w.keyword == Keyword::CASE => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if w.keyword == Keyword::END => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > NESTING_DEPTH_MAX {
            return Err(too_deep());
        }
    }
    Ok(())
}

/// The error PostgreSQL gives for nesting past its stack.
pub fn too_deep() -> WeirError {
    WeirError::new(ErrorKind::StackDepthExceeded, "stack depth limit exceeded")
        .with_hint(format!("Expressions and subqueries may nest at most {NESTING_DEPTH_MAX} deep in weir."))
}

/// 54001 when a statement nests deeper than `NESTING_DEPTH_MAX`.
pub fn check<V: Visit>(stmt: &V) -> Result<()> {
    match stmt.visit(&mut Depth { now: 0 }) {
        ControlFlow::Break(()) => Err(too_deep()),
        ControlFlow::Continue(()) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn deep_chains_are_54001_and_shallow_ones_pass() {
        let ok = format!("SELECT 1{}", " + 1".repeat(900));
        assert!(crate::parser::parse(&ok).is_ok());
        let deep = format!("SELECT 1{}", " + 1".repeat(1200));
        let e = crate::parser::parse(&deep).unwrap_err();
        assert_eq!(e.sqlstate(), "54001");
        assert_eq!(e.message, "stack depth limit exceeded");
        let parens = format!("SELECT {}1{}", "(".repeat(1500), ")".repeat(1500));
        assert_eq!(crate::parser::parse(&parens).unwrap_err().sqlstate(), "54001");
        let case = format!("SELECT {}1{}", "CASE WHEN TRUE THEN ".repeat(1500), " END".repeat(1500));
        assert_eq!(crate::parser::parse(&case).unwrap_err().sqlstate(), "54001");
        let fine = format!("SELECT {}1{}", "(".repeat(500), ")".repeat(500));
        assert!(crate::parser::parse(&fine).is_ok());
    }
}
