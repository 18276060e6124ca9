//! Roles (users and groups) of the catalog, and their passwords as
//! PostgreSQL's SCRAM-SHA-256 verifiers
//! (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`): a
//! cleartext password is never stored.
//!
//! Part of `catalog`: may import `error` only.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::{digest, hmac, pbkdf2};
use serde::{Deserialize, Serialize};

use super::{Catalog, ROLE_PREFIX};
use crate::error::Result;
use crate::{bail, err};

/// PostgreSQL's default `scram_iterations`.
pub const SCRAM_ITERATIONS: u32 = 4096;

/// One role.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoleDef {
    pub name: String,
    pub oid: u32,
    pub superuser: bool,
    pub login: bool,
    pub createdb: bool,
    pub createrole: bool,
    pub inherit: bool,
    /// The SCRAM-SHA-256 verifier, if the role has a password.
    pub password: Option<String>,
    /// Roles this role is a direct member of.
    pub member_of: Vec<String>,
}

impl RoleDef {
    pub fn new(name: &str) -> RoleDef {
        RoleDef {
            name: name.to_string(),
            oid: 0,
            superuser: false,
            login: false,
            createdb: false,
            createrole: false,
            inherit: true,
            password: None,
            member_of: vec![],
        }
    }
}

/// A parsed SCRAM-SHA-256 verifier.
#[derive(Clone)]
pub struct ScramVerifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramVerifier(<redacted>)")
    }
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data).as_ref().to_vec()
}

fn salted_password(password: &str, salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut out = [0u8; 32];
    let iters = std::num::NonZeroU32::new(iterations.max(1)).unwrap();
    pbkdf2::derive(pbkdf2::PBKDF2_HMAC_SHA256, iters, salt, password.as_bytes(), &mut out);
    out
}

impl ScramVerifier {
    /// A new verifier for `password` with a random 16-byte salt.
    pub fn generate(password: &str) -> Result<ScramVerifier> {
        use ring::rand::SecureRandom;
        let mut salt = [0u8; 16];
        ring::rand::SystemRandom::new().fill(&mut salt).map_err(|_| err!(Internal, "could not generate random salt"))?;
        Ok(ScramVerifier::derive(password, &salt, SCRAM_ITERATIONS))
    }

    pub fn derive(password: &str, salt: &[u8], iterations: u32) -> ScramVerifier {
        let sp = salted_password(password, salt, iterations);
        let client_key = hmac_sha256(&sp, b"Client Key");
        let stored_key = digest::digest(&digest::SHA256, &client_key).as_ref().to_vec();
        let server_key = hmac_sha256(&sp, b"Server Key");
        ScramVerifier { iterations, salt: salt.to_vec(), stored_key, server_key }
    }

    /// PostgreSQL's text form.
    pub fn encode(&self) -> String {
        format!(
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }

    pub fn parse(s: &str) -> Option<ScramVerifier> {
        let rest = s.strip_prefix("SCRAM-SHA-256$")?;
        let (head, keys) = rest.split_once('$')?;
        let (iters, salt) = head.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let v = ScramVerifier {
            iterations: iters.parse().ok()?,
            salt: STANDARD.decode(salt).ok()?,
            stored_key: STANDARD.decode(stored).ok()?,
            server_key: STANDARD.decode(server).ok()?,
        };
        (v.stored_key.len() == 32 && v.server_key.len() == 32 && v.iterations > 0).then_some(v)
    }

    /// Does a cleartext password match (the `password` method)?
    pub fn matches(&self, password: &str) -> bool {
        let other = ScramVerifier::derive(password, &self.salt, self.iterations);
        // Compare without an early exit.
        other.stored_key.len() == self.stored_key.len()
            && other.stored_key.iter().zip(&self.stored_key).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// What a password given in CREATE/ALTER ROLE becomes: a verifier given as
/// one is kept, anything else is hashed.
pub fn password_verifier(password: &str) -> Result<String> {
    if ScramVerifier::parse(password).is_some() {
        return Ok(password.to_string());
    }
    Ok(ScramVerifier::generate(password)?.encode())
}

/// Reserved role names, as PostgreSQL has them.
fn check_name(name: &str) -> Result<()> {
    if name == "public" || name == "none" {
        bail!(ReservedName, "role name \"{name}\" is reserved");
    }
    if name.starts_with("pg_") {
        bail!(ReservedName, "role name \"{name}\" is reserved");
    }
    Ok(())
}

impl Catalog {
    fn put_role(&self, r: &RoleDef) -> Result<()> {
        self.put(format!("{ROLE_PREFIX}{}", r.name), serde_json::to_vec(r).unwrap())
    }

    pub fn role(&self, name: &str) -> Option<RoleDef> {
        self.state.read().roles.get(name).cloned()
    }

    pub fn roles(&self) -> Vec<RoleDef> {
        self.state.read().roles.values().cloned().collect()
    }

    pub fn has_roles(&self) -> bool {
        !self.state.read().roles.is_empty()
    }

    pub fn create_role(&self, mut def: RoleDef) -> Result<()> {
        check_name(&def.name)?;
        let mut st = self.state.write();
        if st.roles.contains_key(&def.name) {
            bail!(DuplicateObject, "role \"{}\" already exists", def.name);
        }
        for m in &def.member_of {
            if !st.roles.contains_key(m) {
                bail!(UndefinedObject, "role \"{m}\" does not exist");
            }
        }
        // The bootstrap superuser is oid 10, as in PostgreSQL.
        def.oid = if st.roles.is_empty() { 10 } else { 16384 + self.db.generate_id()? as u32 };
        self.put_role(&def)?;
        st.roles.insert(def.name.clone(), def);
        Ok(())
    }

    /// Change a role with `f` (which may fail, leaving it unchanged).
    pub fn alter_role(&self, name: &str, f: impl FnOnce(&mut RoleDef) -> Result<()>) -> Result<()> {
        let mut st = self.state.write();
        let Some(mut r) = st.roles.get(name).cloned() else {
            bail!(UndefinedObject, "role \"{name}\" does not exist");
        };
        f(&mut r)?;
        for m in &r.member_of {
            if !st.roles.contains_key(m) {
                bail!(UndefinedObject, "role \"{m}\" does not exist");
            }
        }
        self.put_role(&r)?;
        st.roles.insert(name.to_string(), r);
        Ok(())
    }

    /// Drop a role; memberships in it go too.
    pub fn drop_role(&self, name: &str) -> Result<()> {
        let mut st = self.state.write();
        if st.roles.remove(name).is_none() {
            bail!(UndefinedObject, "role \"{name}\" does not exist");
        }
        self.del(format!("{ROLE_PREFIX}{name}"))?;
        let members: Vec<RoleDef> = st.roles.values().filter(|r| r.member_of.iter().any(|m| m == name)).cloned().collect();
        for mut r in members {
            r.member_of.retain(|m| m != name);
            self.put_role(&r)?;
            st.roles.insert(r.name.clone(), r);
        }
        Ok(())
    }

    /// Every role `name` is a member of, directly or not, itself included
    /// (`inherit_only`: follow only roles that inherit, for privileges).
    pub fn role_closure(&self, name: &str, inherit_only: bool) -> Vec<String> {
        let st = self.state.read();
        let mut out = vec![name.to_string()];
        let mut i = 0;
        while i < out.len() {
            let cur = out[i].clone();
            i += 1;
            let Some(r) = st.roles.get(&cur) else { continue };
            if inherit_only && !r.inherit {
                continue;
            }
            for m in &r.member_of {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
        }
        out
    }

    /// The roles and ACLs as they are now, before a statement of a
    /// transaction block changes them ([`Catalog::auth_changes`]).
    pub fn auth_state(&self) -> AuthState {
        let st = self.state.read();
        AuthState { roles: st.roles.clone(), acls: st.acls.clone() }
    }

    /// What changed since `before`, as the entries to put back to undo it.
    pub fn auth_changes(&self, before: &AuthState) -> AuthUndo {
        let st = self.state.read();
        let mut undo = AuthUndo::default();
        for k in before.roles.keys().chain(st.roles.keys()) {
            let (old, new) = (before.roles.get(k), st.roles.get(k));
            let changed = match (old, new) {
                (Some(o), Some(n)) => stored(o) != stored(n),
                (None, None) => false,
                _ => true,
            };
            if changed && !undo.roles.iter().any(|(n, _)| n == k) {
                undo.roles.push((k.clone(), old.cloned()));
            }
        }
        for k in before.acls.keys().chain(st.acls.keys()) {
            let (old, new) = (before.acls.get(k), st.acls.get(k));
            let changed = match (old, new) {
                (Some(o), Some(n)) => stored(o) != stored(n),
                (None, None) => false,
                _ => true,
            };
            if changed && !undo.acls.iter().any(|(n, _)| n == k) {
                undo.acls.push((k.clone(), old.cloned()));
            }
        }
        undo
    }

    /// Put back what [`Catalog::auth_changes`] recorded (ROLLBACK).
    pub fn undo_auth(&self, undo: &AuthUndo) -> Result<()> {
        let mut st = self.state.write();
        for (name, old) in &undo.roles {
            match old {
                Some(r) => {
                    self.put_role(r)?;
                    st.roles.insert(name.clone(), r.clone());
                }
                None => {
                    self.del(format!("{ROLE_PREFIX}{name}"))?;
                    st.roles.remove(name);
                }
            }
        }
        for (key, old) in &undo.acls {
            match old {
                Some(a) => {
                    self.put(key.clone(), serde_json::to_vec(a).map_err(|e| err!(Internal, "{e}"))?)?;
                    st.acls.insert(key.clone(), a.clone());
                }
                None => {
                    self.del(key.clone())?;
                    st.acls.remove(key);
                }
            }
        }
        Ok(())
    }

    pub fn is_superuser(&self, name: &str) -> bool {
        self.state.read().roles.get(name).is_some_and(|r| r.superuser)
    }
}

/// Roles and ACLs at one moment (a statement's start).
pub struct AuthState {
    roles: BTreeMap<String, RoleDef>,
    acls: BTreeMap<String, super::acl::ObjectAcl>,
}

/// The roles and ACL entries a statement changed, with their earlier
/// values (None: the entry did not exist).
#[derive(Debug, Clone, Default)]
pub struct AuthUndo {
    pub roles: Vec<(String, Option<RoleDef>)>,
    pub acls: Vec<(String, Option<super::acl::ObjectAcl>)>,
}

impl AuthUndo {
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty() && self.acls.is_empty()
    }
}

/// An entry's stored (JSON) form, to compare entries.
fn stored<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our verifiers, and one PostgreSQL 15 produced for password 'secret'.
    #[test]
    fn verifier_round_trip_and_match() {
        let v = ScramVerifier::generate("secret").unwrap();
        let text = v.encode();
        assert!(text.starts_with("SCRAM-SHA-256$4096:"));
        let back = ScramVerifier::parse(&text).unwrap();
        assert!(back.matches("secret"));
        assert!(!back.matches("Secret"));
        assert_eq!(password_verifier(&text).unwrap(), text);
        assert!(ScramVerifier::parse("md5abc").is_none());
        // Made by PostgreSQL 15 for 'secret': same derivation.
        let pg = "SCRAM-SHA-256$4096:gh8+jImClU2VuRWcQr8GEA==$vIIsRrblM9loQKI7PEMKmfkH+bnZN+hz/9xezZO3q/w=:NsOhI3psf1xrjJmqZBOeAEMotCe6RHy5pbL0sl8G4+M=";
        let v = ScramVerifier::parse(pg).unwrap();
        assert!(v.matches("secret"));
        assert_eq!(ScramVerifier::derive("secret", &v.salt, 4096).encode(), pg);
    }
}
