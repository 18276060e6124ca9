//! `WeirDialect`: PostgreSQL's grammar as sqlparser's `PostgreSqlDialect`
//! has it, plus GreptimeDB's timestamp type names and `DESC TABLE t`.
//! `parse_prefix` takes a lone literal (a string or number directly followed
//! by `,` or `)`, the cells of a multi-row VALUES) without sqlparser's
//! speculative type-name parse, which builds and drops an error message per
//! literal; the AST is the same (test `literal_cells_parse_as_before`).
//!
//! `supports_from_first_insert` is on, for the SEARCH / CYCLE marker (`search_cycle.rs`).
//! Every method `PostgreSqlDialect` overrides is forwarded, and `dialect()`
//! answers PostgreSQL's `TypeId`, so sqlparser's own `dialect_of!` checks
//! treat weir as PostgreSQL. The methods it does not override keep the
//! trait's defaults, as they do for PostgreSQL. When sqlparser is upgraded,
//! the forwarding list is checked against `postgresql.rs` again (the unit
//! test `same_ast_as_postgres` catches most misses).

use std::any::TypeId;

use sqlparser::ast::{self, DataType, Expr, TimezoneInfo, Value};
use sqlparser::dialect::{BindPlaceholderStyle, Dialect, PostgreSqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// weir's dialect: PostgreSQL's, delegated, with GreptimeDB's timestamp
/// type names.
#[derive(Debug, Default)]
pub struct WeirDialect {
    pg: PostgreSqlDialect,
    /// `standard_conforming_strings = off`: a backslash escapes in ordinary `'…'` strings.
    backslash_strings: bool,
}

/// GreptimeDB's timestamp names with a unit, as PostgreSQL's
/// `TIMESTAMP(p)` (p = fractional digits of a second).
fn greptime_timestamp(name: &str) -> Option<u64> {
    Some(match name.to_ascii_lowercase().as_str() {
        "timestamp_s" | "timestamp_sec" | "timestampsecond" => 0,
        "timestamp_ms" | "timestampmillisecond" => 3,
        "timestamp_us" | "timestampmicrosecond" => 6,
        "timestamp_ns" | "timestampnanosecond" => 9,
        _ => return None,
    })
}

macro_rules! forward_flags {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool {
            self.pg.$name()
        })*
    };
}

/// PostgreSQL's `interval(p) '…'`: a typed string whose type keeps its
/// precision (sqlparser reads the type, then an INTERVAL literal without
/// it). Not with a field after the string (`interval(2) '1' second`).
fn interval_precision_literal(parser: &mut Parser) -> Option<Expr> {
    let is = |k: usize, f: &dyn Fn(&Token) -> bool| f(&parser.peek_nth_token_ref(k).token);
    if !is(0, &|t| matches!(t, Token::Word(w) if w.keyword == Keyword::INTERVAL))
        || !is(1, &|t| *t == Token::LParen)
        || !is(3, &|t| *t == Token::RParen)
        || !is(
            5,
            &|t| !matches!(t, Token::Word(w) if matches!(w.keyword, Keyword::YEAR | Keyword::MONTH | Keyword::DAY | Keyword::HOUR | Keyword::MINUTE | Keyword::SECOND)),
        )
    {
        return None;
    }
    let Token::Number(n, _) = &parser.peek_nth_token_ref(2).token else { return None };
    let precision: u64 = n.parse().ok()?;
    let t = parser.peek_nth_token_ref(4);
    let Token::SingleQuotedString(v) = &t.token else { return None };
    let value = Value::SingleQuotedString(v.clone()).with_span(t.span);
    for _ in 0..5 {
        parser.next_token();
    }
    Some(Expr::TypedString(ast::TypedString {
        data_type: DataType::Interval { fields: None, precision: Some(precision) },
        value,
        uses_odbc_syntax: false,
    }))
}

/// `SUBSTRING(x SIMILAR p ESCAPE e)` ahead: SUBSTRING, `(`, and a SIMILAR
/// not followed by TO at the parentheses' own level (sqlparser has only the
/// FROM / FOR forms).
/// `(` then an unquoted `VALUES`: a parenthesized VALUES query.
fn values_subquery_ahead(parser: &Parser) -> bool {
    parser.peek_token_ref().token == Token::LParen
        && matches!(&parser.peek_nth_token_ref(1).token, Token::Word(w) if w.keyword == Keyword::VALUES && w.quote_style.is_none())
}

fn substring_similar_ahead(parser: &Parser) -> bool {
    if !matches!(&parser.peek_token_ref().token, Token::Word(w) if w.keyword == Keyword::SUBSTRING)
        || parser.peek_nth_token_ref(1).token != Token::LParen
    {
        return false;
    }
    let mut depth = 0usize;
    for k in 2.. {
        match &parser.peek_nth_token_ref(k).token {
            Token::EOF => return false,
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return false,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::SIMILAR => {
                return !matches!(&parser.peek_nth_token_ref(k + 1).token, Token::Word(t) if t.keyword == Keyword::TO)
            }
            _ => {}
        }
    }
    false
}

impl WeirDialect {
    /// The dialect for a session with `standard_conforming_strings = off`.
    pub fn with_backslash_strings() -> WeirDialect {
        WeirDialect { backslash_strings: true, ..WeirDialect::default() }
    }

    pub fn backslash_strings(&self) -> bool {
        self.backslash_strings
    }

    /// `SUBSTRING(x SIMILAR p ESCAPE e)` as a call of `substring_similar(x, p, e)`.
    fn parse_substring_similar(&self, parser: &mut Parser) -> Result<Expr, ParserError> {
        parser.next_token();
        parser.expect_token(&Token::LParen)?;
        // Operands bind tighter than SIMILAR (LIKE's precedence).
        let like = self.prec_value(Precedence::Like);
        let x = parser.parse_subexpr(like)?;
        parser.expect_keyword_is(Keyword::SIMILAR)?;
        let p = parser.parse_subexpr(like)?;
        parser.expect_keyword_is(Keyword::ESCAPE)?;
        let e = parser.parse_expr()?;
        parser.expect_token(&Token::RParen)?;
        Ok(Expr::Function(ast::Function {
            name: ast::ObjectName::from(vec![ast::Ident::new("substring_similar")]),
            uses_odbc_syntax: false,
            parameters: ast::FunctionArguments::None,
            args: ast::FunctionArguments::List(ast::FunctionArgumentList {
                duplicate_treatment: None,
                args: [x, p, e].into_iter().map(|a| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a))).collect(),
                clauses: vec![],
            }),
            filter: None,
            null_treatment: None,
            over: None,
            within_group: vec![],
        }))
    }
}

impl Dialect for WeirDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    /// Keeps `WITH q AS (…) FROM name` (its only use in sqlparser): where `search_cycle.rs`
    /// puts the marker of a WITH query's SEARCH / CYCLE clauses.
    fn supports_from_first_insert(&self) -> bool {
        true
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if substring_similar_ahead(parser) {
            return Some(self.parse_substring_similar(parser));
        }
        if let Some(e) = interval_precision_literal(parser) {
            return Some(Ok(e));
        }
        if values_subquery_ahead(parser) {
            // `(VALUES (1))`: VALUES is reserved in PostgreSQL, so this is a
            // scalar subquery; sqlparser would read a call of a function `values`.
            parser.next_token();
            return Some(parser.parse_query().and_then(|q| {
                parser.expect_token(&Token::RParen)?;
                Ok(Expr::Subquery(q))
            }));
        }
        let t = parser.peek_token_ref();
        let value = match &t.token {
            Token::SingleQuotedString(s) => Value::SingleQuotedString(s.clone()),
            Token::Number(n, long) => Value::Number(n.clone(), *long),
            _ => return None,
        };
        let span = t.span;
        if !matches!(parser.peek_nth_token_ref(1).token, Token::Comma | Token::RParen) {
            return None;
        }
        parser.next_token();
        Some(Ok(Expr::Value(value.with_span(span))))
    }

    fn parse_data_type(&self, parser: &mut Parser) -> Option<Result<DataType, ParserError>> {
        let precision = match &parser.peek_token_ref().token {
            Token::Word(w) if w.quote_style.is_none() => greptime_timestamp(&w.value)?,
            _ => return None,
        };
        parser.next_token();
        Some(Ok(DataType::Timestamp(Some(precision), TimezoneInfo::None)))
    }

    /// GreptimeDB's `DESC TABLE t` and `DESCRIBE TABLE t` (PostgreSQL has
    /// no DESCRIBE; `DESCRIBE t` keeps working).
    fn describe_requires_table_keyword(&self) -> bool {
        true
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.pg.identifier_quote_style(identifier)
    }
    fn ordered_bind_placeholder_style(&self) -> Option<BindPlaceholderStyle> {
        self.pg.ordered_bind_placeholder_style()
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.pg.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        self.pg.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        self.pg.is_identifier_part(ch)
    }
    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        self.pg.is_reserved_for_identifier(kw)
    }
    fn is_table_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool {
        self.pg.is_table_alias(kw, parser)
    }
    fn supports_string_literal_column_alias(&self, explicit: bool) -> bool {
        self.pg.supports_string_literal_column_alias(explicit)
    }
    fn supports_string_literal_table_alias(&self, explicit: bool) -> bool {
        self.pg.supports_string_literal_table_alias(explicit)
    }
    fn is_custom_operator_part(&self, ch: char) -> bool {
        self.pg.is_custom_operator_part(ch)
    }
    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.pg.get_next_precedence(parser)
    }
    fn prec_value(&self, prec: Precedence) -> u8 {
        self.pg.prec_value(prec)
    }
    fn is_interval_qualifier(&self, kw: Keyword) -> bool {
        self.pg.is_interval_qualifier(kw)
    }
    fn is_custom_type_typed_string(&self, first_keyword: Keyword, qualified: bool) -> bool {
        self.pg.is_custom_type_typed_string(first_keyword, qualified)
    }

    /// `U&'…'` is read on the tokens (`pg_lexical.rs`), which also takes UESCAPE; sqlparser's
    /// own U& literal cannot.
    fn supports_unicode_string_literal(&self) -> bool {
        false
    }

    /// Off unless the session turned `standard_conforming_strings` off.
    fn supports_string_literal_backslash_escape(&self) -> bool {
        self.backslash_strings
    }

    /// `'a'` newline `'b'` is one string, as PostgreSQL's scanner has it.
    fn supports_string_literal_concatenation_with_newline(&self) -> bool {
        true
    }

    forward_flags!(
        supports_cte_materialization,
        supports_filter_during_aggregation,
        supports_group_by_expr,
        supports_drop_group,
        supports_alter_user_as_alter_role,
        supports_create_group,
        supports_create_role_if_not_exists,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_create_index_with_clause,
        supports_sql_option_without_value,
        supports_explain_with_utility_options,
        supports_listen_notify,
        supports_exclude_constraint,
        supports_factorial_operator,
        supports_bitwise_shift_operators,
        supports_tilde_like_match_operator,
        supports_comparison_in_between_low_bound,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_colon_operator,
        supports_named_fn_args_with_expr_name,
        supports_named_fn_args_with_assignment_operator,
        supports_empty_projections,
        supports_nested_comments,
        supports_copy_from_stdin_data,
        supports_string_escape_constant,
        supports_numeric_literal_underscores,
        supports_non_decimal_integer_literals,
        supports_array_typedef_with_brackets,
        supports_geometric_types,
        supports_order_by_using_operator,
        supports_set_names,
        supports_alter_column_type_using,
        supports_left_associative_joins_without_parens,
        supports_notnull_operator,
        supports_interval_options,
        supports_insert_table_alias,
        supports_create_table_like_parenthesized,
        supports_select_wildcard_with_alias,
        supports_comma_separated_trim,
        supports_xml_expressions,
        supports_aliased_function_args,
        supports_comment_optimizer_hint,
        supports_add_column_if_not_exists,
        supports_attach_partition_of,
        supports_detach_partition_of,
        supports_table_inheritance_markers,
        supports_column_generic_options,
    );
}
