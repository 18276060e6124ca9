//! User-defined types as the catalog records them (`CREATE TYPE`, `CREATE
//! DOMAIN`): shell types, composite types (named fields), enums (labels in
//! declaration order) and domains (a base type with NOT NULL, DEFAULT and
//! CHECK constraints, kept as SQL text). The statements are
//! `sql/user_type.rs`; the planner resolves type names through
//! [`Catalog::user_type`].
//!
//! Imports `types` and `error` only.

use serde::{Deserialize, Serialize};

use super::Catalog;
use crate::error::Result;
use crate::types::SqlType;
use crate::{bail, err};

pub(super) const TYPE_PREFIX: &str = "type/";

/// What a user-defined type is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TypeKind {
    /// `CREATE TYPE name;`: a name reserved for a base type to come.
    Shell,
    /// `CREATE TYPE name AS (field type, …)`.
    Composite(Vec<(String, SqlType)>),
    /// `CREATE TYPE name AS ENUM ('a', …)`.
    Enum(Vec<String>),
    /// `CREATE DOMAIN name AS base …`.
    Domain(DomainDef),
    /// `CREATE TYPE name (INPUT = f, OUTPUT = g, …)`: a base type whose
    /// input and output functions are built-in ones (`int4in`, …).
    Base(BaseDef),
}

/// A base type: its values are `repr`'s; `input` / `output` name its
/// functions (user functions of LANGUAGE internal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseDef {
    pub repr: crate::types::Elem,
    pub input: String,
    pub output: String,
}

/// A domain's base type and constraints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainDef {
    pub base: SqlType,
    /// The user-defined type the base is (a composite type: `(VALUE).field` in a
    /// CHECK reads its fields), as `ColumnDef::user_type` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_type: Option<String>,
    pub not_null: bool,
    /// DEFAULT expr, as SQL text.
    pub default: Option<String>,
    /// CHECK constraints: (name, expression over VALUE as SQL text).
    pub checks: Vec<(String, String)>,
}

/// A user-defined type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeDef {
    /// Drawn from the id generator tables use: the type's OID.
    pub id: u32,
    pub database: String,
    pub name: String,
    pub kind: TypeKind,
}

impl TypeDef {
    /// A base type's SQL type (None for other kinds).
    pub fn base_type(&self) -> Option<SqlType> {
        match &self.kind {
            TypeKind::Base(b) => Some(SqlType::Base { oid: self.id, repr: b.repr }),
            _ => None,
        }
    }

    /// Make a base type's name known to `SqlType::pg_name`.
    pub(super) fn register(&self) {
        if let TypeKind::Base(_) = self.kind {
            crate::types::register_base_name(self.id, &self.name);
        }
    }

    pub(super) fn key(&self) -> String {
        format!("{TYPE_PREFIX}{}/{}", self.database, self.name)
    }

    /// `type` or `domain`, as PostgreSQL's messages name it.
    pub fn word(&self) -> &'static str {
        match self.kind {
            TypeKind::Domain(_) => "domain",
            _ => "type",
        }
    }
}

impl Catalog {
    /// Create a type; a shell of the same name is replaced (its id kept).
    pub fn create_type(&self, mut def: TypeDef) -> Result<TypeDef> {
        let mut st = self.state.write();
        let k = (def.database.clone(), def.name.clone());
        match st.types.get(&k) {
            Some(old) if old.kind == TypeKind::Shell && def.kind != TypeKind::Shell => def.id = old.id,
            Some(_) => bail!(DuplicateObject, "type \"{}\" already exists", def.name),
            None => {
                if st.tables.contains_key(&k) || st.views.contains_key(&k) || st.sequences.contains_key(&k) {
                    // A relation's row type has its name.
                    bail!(DuplicateObject, "type \"{}\" already exists", def.name);
                }
                def.id = self.next_table_id()?;
            }
        }
        self.put(def.key(), serde_json::to_vec(&def).expect("a type definition serializes"))?;
        def.register();
        st.types.insert(k, def.clone());
        Ok(def)
    }

    /// Put a type back as it was (a rolled back DROP TYPE).
    pub fn restore_type(&self, def: TypeDef) -> Result<()> {
        let mut st = self.state.write();
        self.put(def.key(), serde_json::to_vec(&def).expect("a type definition serializes"))?;
        def.register();
        st.types.insert((def.database.clone(), def.name.clone()), def);
        Ok(())
    }

    /// Drop a type; None when there is none of that name.
    pub fn drop_type(&self, database: &str, name: &str) -> Result<Option<TypeDef>> {
        let mut st = self.state.write();
        let Some(def) = st.types.remove(&(database.to_string(), name.to_string())) else { return Ok(None) };
        self.del(def.key())?;
        Ok(Some(def))
    }

    /// A type of a database by name.
    pub fn user_type(&self, database: &str, name: &str) -> Option<TypeDef> {
        self.state.read().types.get(&(database.to_string(), name.to_string())).cloned()
    }

    /// A type by OID.
    pub fn user_type_by_id(&self, id: u32) -> Option<TypeDef> {
        self.state.read().types.values().find(|t| t.id == id).cloned()
    }

    /// Every type of a database.
    pub fn database_types(&self, database: &str) -> Vec<TypeDef> {
        self.state.read().types.values().filter(|t| t.database == database).cloned().collect()
    }
}

/// The labels of an enum, for `22P02` messages and `enum_range`.
pub fn enum_labels(def: &TypeDef) -> Result<&[String]> {
    match &def.kind {
        TypeKind::Enum(l) => Ok(l),
        _ => Err(err!(WrongObjectType, "\"{}\" is not an enum", def.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_survive_a_reopen_and_a_shell_is_filled_in() {
        let dir = tempfile::tempdir().unwrap();
        let def = |name: &str, kind: TypeKind| TypeDef { id: 0, database: "public".into(), name: name.into(), kind };
        {
            let cat = Catalog::open(dir.path()).unwrap();
            let shell = cat.create_type(def("t", TypeKind::Shell)).unwrap();
            let full = cat.create_type(def("t", TypeKind::Enum(vec!["a".into(), "b".into()]))).unwrap();
            assert_eq!(shell.id, full.id);
            let e = cat.create_type(def("t", TypeKind::Shell)).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::DuplicateObject);
            cat.create_type(def("c", TypeKind::Composite(vec![("x".into(), SqlType::Int4)]))).unwrap();
        }
        let cat = Catalog::open(dir.path()).unwrap();
        assert_eq!(enum_labels(&cat.user_type("public", "t").unwrap()).unwrap(), ["a", "b"]);
        assert!(cat.drop_type("public", "c").unwrap().is_some());
        assert!(cat.drop_type("public", "c").unwrap().is_none());
        cat.drop_database("public").unwrap();
        assert!(cat.database_types("public").is_empty());
    }
}
