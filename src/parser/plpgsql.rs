//! The PL/pgSQL weir runs: a body that only returns an expression,
//! `BEGIN RETURN expr; END`, which means what the SQL function
//! `SELECT expr` means. Parsed on sqlparser's tokens.

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::Token;

use super::{nesting, new_parser, WeirDialect};
use crate::error::WeirError;

/// The expression of a `BEGIN RETURN expr; END` body; None for any other
/// body (declarations, assignments, IF, loops, RAISE …).
pub fn return_expression(body: &str) -> Result<Option<ast::Expr>, WeirError> {
    let dialect = WeirDialect::default();
    let mut p = new_parser(&dialect, body)?;
    if !p.parse_keyword(Keyword::BEGIN) || !p.parse_keyword(Keyword::RETURN) {
        return Ok(None);
    }
    let Ok(e) = p.parse_expr() else { return Ok(None) };
    if !p.consume_token(&Token::SemiColon) || !p.parse_keyword(Keyword::END) {
        return Ok(None);
    }
    while p.consume_token(&Token::SemiColon) {}
    if p.peek_token_ref().token != Token::EOF {
        return Ok(None);
    }
    nesting::check(&e)?;
    Ok(Some(e))
}

#[cfg(test)]
mod tests {
    use super::return_expression;

    #[test]
    fn only_a_returned_expression_is_understood() {
        let e = return_expression("\n  BEGIN\n    RETURN a + 1;\n  END;\n").unwrap().unwrap();
        assert_eq!(e.to_string(), "a + 1");
        assert!(return_expression("begin return $1; end").unwrap().is_some());
        assert!(return_expression("begin raise notice 'x'; return 1; end").unwrap().is_none());
        assert!(return_expression("declare x int; begin return x; end").unwrap().is_none());
        assert!(return_expression("begin return 1; end; select 1").unwrap().is_none());
    }
}
