//! `CREATE TABLE` with GreptimeDB's clauses:
//!
//! ```text
//! CREATE TABLE [IF NOT EXISTS] [db.]name (
//!     column type [column options] [TIME INDEX] [INVERTED | SKIPPING | FULLTEXT INDEX [WITH (...)]],
//!     ...
//!     [TIME INDEX (column)], [PRIMARY KEY (...)], [INVERTED INDEX (...)], [constraints]
//! )
//! [INHERITS (parent, ...)] [PARTITION ON COLUMNS (...) (...)] [ENGINE [=] name] [WITH (options)]
//! ```
//!
//! Columns, their options and table constraints are sqlparser's (its
//! `parse_column_def` and `parse_optional_table_constraint`); weir adds the
//! clauses around them. Other CREATE TABLE forms (`AS`, `LIKE`,
//! `PARTITION OF`, `CREATE TEMP TABLE`) stay sqlparser's.

use std::fmt;

use sqlparser::ast::{self, ColumnDef, ColumnOptionDef, Ident, ObjectName, SqlOption, TableConstraint};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{parse_words, peek_words, peek_words_at, Statement};

/// A weir `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub if_not_exists: bool,
    pub name: ObjectName,
    pub columns: Vec<ColumnDef>,
    pub constraints: Vec<TableConstraint>,
    /// Every `TIME INDEX` written (more than one is an error for the
    /// session to report).
    pub time_index: Vec<TimeIndex>,
    /// GreptimeDB's index hints.
    pub indexes: Vec<IndexHint>,
    pub partition: Option<Partition>,
    /// PostgreSQL's `PARTITION BY RANGE | LIST | HASH (key)`, as
    /// sqlparser parses it (a call of `range`, `list` or `hash`).
    pub partition_by: Option<ast::Expr>,
    /// Each key element's operator class (`PARTITION BY HASH (a my_ops)`),
    /// one per argument of `partition_by`'s call, or empty when none names one.
    pub partition_opclasses: Vec<Option<ObjectName>>,
    pub engine: Option<Ident>,
    pub options: Vec<SqlOption>,
    /// PostgreSQL's `INHERITS (parent, …)`.
    pub inherits: Vec<ObjectName>,
}

/// `TIME INDEX`, written after a column's type or as a table constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeIndex {
    pub column: Ident,
    /// The column-option form (`ts TIMESTAMP TIME INDEX`).
    pub inline: bool,
}

/// `INVERTED INDEX`, `SKIPPING INDEX` or `FULLTEXT INDEX` on columns.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexHint {
    /// `INVERTED`, `SKIPPING` or `FULLTEXT`, upper case.
    pub kind: String,
    pub columns: Vec<Ident>,
    pub options: Vec<SqlOption>,
    pub inline: bool,
}

/// `PARTITION ON COLUMNS (columns) (rules)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    pub columns: Vec<Ident>,
    pub rules: Vec<ast::Expr>,
}

const INDEX_KINDS: [&str; 3] = ["INVERTED", "SKIPPING", "FULLTEXT"];

/// weir parses `CREATE TABLE [IF NOT EXISTS] name (`; other forms are
/// sqlparser's.
pub(super) fn applies(parser: &Parser) -> bool {
    let mut n = 2;
    if peek_words_at(parser, n, &["IF", "NOT", "EXISTS"]) {
        n += 3;
    }
    // A dotted name: word (. word)*.
    loop {
        if !matches!(parser.peek_nth_token_ref(n).token, Token::Word(_)) {
            return false;
        }
        n += 1;
        if parser.peek_nth_token_ref(n).token != Token::Period {
            break;
        }
        n += 1;
    }
    // `CREATE TABLE t (LIKE source …)` is sqlparser's.
    parser.peek_nth_token_ref(n).token == Token::LParen
        && !matches!(&parser.peek_nth_token_ref(n + 1).token, Token::Word(w) if w.keyword == Keyword::LIKE)
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keywords(&[Keyword::CREATE, Keyword::TABLE])?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let mut ct = CreateTable {
        if_not_exists,
        name,
        columns: vec![],
        constraints: vec![],
        time_index: vec![],
        indexes: vec![],
        partition: None,
        partition_by: None,
        partition_opclasses: vec![],
        engine: None,
        options: vec![],
        inherits: vec![],
    };
    parser.expect_token(&Token::LParen)?;
    // `()` is a table without columns (PostgreSQL's grammar allows it); a
    // trailing comma before `)` is GreptimeDB's habit.
    while !parser.consume_token(&Token::RParen) {
        element(parser, &mut ct)?;
        if !parser.consume_token(&Token::Comma) {
            parser.expect_token(&Token::RParen)?;
            break;
        }
    }
    if parser.parse_keyword(Keyword::INHERITS) {
        parser.expect_token(&Token::LParen)?;
        ct.inherits = parser.parse_comma_separated(|p| p.parse_object_name(false))?;
        parser.expect_token(&Token::RParen)?;
    }
    loop {
        if ct.partition.is_none() && parse_words(parser, &["PARTITION", "ON", "COLUMNS"]) {
            parser.expect_token(&Token::LParen)?;
            let columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            parser.expect_token(&Token::LParen)?;
            let rules = if parser.consume_token(&Token::RParen) {
                vec![]
            } else {
                let r = parser.parse_comma_separated(Parser::parse_expr)?;
                parser.expect_token(&Token::RParen)?;
                r
            };
            ct.partition = Some(Partition { columns, rules });
        } else if ct.partition_by.is_none() && ct.partition.is_none() && parse_words(parser, &["PARTITION", "BY"]) {
            let (key, opclasses) = partition_key(parser)?;
            ct.partition_by = Some(key);
            ct.partition_opclasses = opclasses;
        } else if ct.engine.is_none() && parser.parse_keyword(Keyword::ENGINE) {
            let _ = parser.consume_token(&Token::Eq);
            ct.engine = Some(parser.parse_identifier()?);
        } else if ct.options.is_empty() && parser.peek_keyword(Keyword::WITH) {
            ct.options = parser.parse_options(Keyword::WITH)?;
        } else {
            break;
        }
    }
    Ok(Statement::CreateTable(Box::new(ct)))
}

/// `PARTITION BY strategy (element [opclass], …)`: the key as a call of
/// the strategy over the elements (how sqlparser reads the clause), and each
/// element's operator class.
fn partition_key(parser: &mut Parser) -> Result<(ast::Expr, Vec<Option<ObjectName>>), ParserError> {
    let strategy = parser.parse_identifier()?;
    parser.expect_token(&Token::LParen)?;
    let mut args = Vec::new();
    let mut opclasses = Vec::new();
    loop {
        args.push(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(parser.parse_expr()?)));
        opclasses.push(match &parser.peek_token_ref().token {
            Token::Word(_) => Some(parser.parse_object_name(false)?),
            _ => None,
        });
        if !parser.consume_token(&Token::Comma) {
            parser.expect_token(&Token::RParen)?;
            break;
        }
    }
    let key = ast::Expr::Function(ast::Function {
        name: ObjectName::from(vec![strategy]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList { duplicate_treatment: None, args, clauses: vec![] }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    });
    if opclasses.iter().all(Option::is_none) {
        opclasses.clear();
    }
    Ok((key, opclasses))
}

/// One element of the parenthesised list: a weir clause, a table
/// constraint, or a column with its options.
fn element(parser: &mut Parser, ct: &mut CreateTable) -> Result<(), ParserError> {
    if peek_words(parser, &["TIME", "INDEX"]) && parser.peek_nth_token_ref(2).token == Token::LParen {
        parse_words(parser, &["TIME", "INDEX"]);
        parser.expect_token(&Token::LParen)?;
        let column = parser.parse_identifier()?;
        parser.expect_token(&Token::RParen)?;
        ct.time_index.push(TimeIndex { column, inline: false });
        return Ok(());
    }
    for kind in INDEX_KINDS {
        if peek_words(parser, &[kind, "INDEX"]) && parser.peek_nth_token_ref(2).token == Token::LParen {
            parse_words(parser, &[kind, "INDEX"]);
            parser.expect_token(&Token::LParen)?;
            let columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
            parser.expect_token(&Token::RParen)?;
            let options = parser.parse_options(Keyword::WITH)?;
            ct.indexes.push(IndexHint { kind: kind.to_string(), columns, options, inline: false });
            return Ok(());
        }
    }
    if let Some(c) = parser.parse_optional_table_constraint()? {
        ct.constraints.push(c);
        return Ok(());
    }
    let mut col = parser.parse_column_def()?;
    // sqlparser stops at the first option it does not know; weir's come
    // in any order among the others.
    loop {
        if parse_words(parser, &["TIME", "INDEX"]) {
            ct.time_index.push(TimeIndex { column: col.name.clone(), inline: true });
        } else if let Some(kind) = INDEX_KINDS.iter().copied().find(|k| peek_words(parser, &[k, "INDEX"])) {
            parse_words(parser, &[kind, "INDEX"]);
            let options = parser.parse_options(Keyword::WITH)?;
            ct.indexes.push(IndexHint { kind: kind.to_string(), columns: vec![col.name.clone()], options, inline: true });
        } else if parser.parse_keyword(Keyword::CONSTRAINT) {
            let name = Some(parser.parse_identifier()?);
            match parser.parse_optional_column_option()? {
                Some(option) => col.options.push(ColumnOptionDef { name, option }),
                None => return parser.expected_ref("constraint details after CONSTRAINT <name>", parser.peek_token_ref()),
            }
        } else if let Some(option) = parser.parse_optional_column_option()? {
            col.options.push(ColumnOptionDef { name: None, option });
        } else {
            break;
        }
    }
    ct.columns.push(col);
    Ok(())
}

fn comma_separated<T: fmt::Display>(items: &[T]) -> String {
    items.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for CreateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE TABLE {}{} (", if self.if_not_exists { "IF NOT EXISTS " } else { "" }, self.name)?;
        let mut elements: Vec<String> = Vec::new();
        for c in &self.columns {
            let mut s = c.to_string();
            if self.time_index.iter().any(|t| t.inline && t.column == c.name) {
                s.push_str(" TIME INDEX");
            }
            for i in self.indexes.iter().filter(|i| i.inline && i.columns.first() == Some(&c.name)) {
                s.push_str(&format!(" {} INDEX", i.kind));
                if !i.options.is_empty() {
                    s.push_str(&format!(" WITH ({})", comma_separated(&i.options)));
                }
            }
            elements.push(s);
        }
        for t in self.time_index.iter().filter(|t| !t.inline) {
            elements.push(format!("TIME INDEX ({})", t.column));
        }
        for i in self.indexes.iter().filter(|i| !i.inline) {
            let mut s = format!("{} INDEX ({})", i.kind, comma_separated(&i.columns));
            if !i.options.is_empty() {
                s.push_str(&format!(" WITH ({})", comma_separated(&i.options)));
            }
            elements.push(s);
        }
        elements.extend(self.constraints.iter().map(|c| c.to_string()));
        write!(f, "{})", elements.join(", "))?;
        if !self.inherits.is_empty() {
            write!(f, " INHERITS ({})", comma_separated(&self.inherits))?;
        }
        if let Some(p) = &self.partition {
            write!(f, " PARTITION ON COLUMNS ({}) ({})", comma_separated(&p.columns), comma_separated(&p.rules))?;
        }
        match &self.partition_by {
            Some(ast::Expr::Function(call)) if self.partition_opclasses.iter().any(Option::is_some) => {
                let ast::FunctionArguments::List(list) = &call.args else { return write!(f, " PARTITION BY {call}") };
                let elements: Vec<String> = list
                    .args
                    .iter()
                    .zip(self.partition_opclasses.iter().chain(std::iter::repeat(&None)))
                    .map(|(a, c)| match c {
                        Some(c) => format!("{a} {c}"),
                        None => a.to_string(),
                    })
                    .collect();
                write!(f, " PARTITION BY {} ({})", call.name, elements.join(", "))?;
            }
            Some(e) => write!(f, " PARTITION BY {e}")?,
            None => {}
        }
        if let Some(e) = &self.engine {
            write!(f, " ENGINE = {e}")?;
        }
        if !self.options.is_empty() {
            write!(f, " WITH ({})", comma_separated(&self.options))?;
        }
        Ok(())
    }
}
