//! PostgreSQL's geometric types as far as weir has them: `point`, `lseg`,
//! `box` and `path`, carried in batches as their canonical output text in a
//! Utf8 column. Input accepts PostgreSQL's forms (point_in, lseg_in, box_in,
//! path_in: the delimiters optional where PostgreSQL allows it, coordinates
//! through float8in); output is PostgreSQL's (`(1,2)`, `[(1,2),(3,4)]`,
//! `(3,4),(1,2)` with a box's corners ordered high then low, `((1,2),(3,4))`
//! for a closed path). No geometric operators or functions yet.
//!
//! Imports nothing of weir's but `error` and `types`.

use crate::err;
use crate::error::Result;

/// Which geometric type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Geo {
    Point,
    Lseg,
    Box,
    Path,
}

impl Geo {
    pub fn name(self) -> &'static str {
        match self {
            Geo::Point => "point",
            Geo::Lseg => "lseg",
            Geo::Box => "box",
            Geo::Path => "path",
        }
    }

    pub fn oid(self) -> u32 {
        match self {
            Geo::Point => 600,
            Geo::Lseg => 601,
            Geo::Path => 602,
            Geo::Box => 603,
        }
    }

    pub fn sql_name(self) -> &'static str {
        match self {
            Geo::Point => "POINT",
            Geo::Lseg => "LSEG",
            Geo::Box => "BOX",
            Geo::Path => "PATH",
        }
    }

    /// A type name (`point`, …) as this module knows it.
    pub fn from_name(n: &str) -> Option<Geo> {
        Some(match n {
            "point" => Geo::Point,
            "lseg" => Geo::Lseg,
            "box" => Geo::Box,
            "path" => Geo::Path,
            _ => return None,
        })
    }

    pub fn from_oid(oid: u32) -> Option<Geo> {
        [Geo::Point, Geo::Lseg, Geo::Box, Geo::Path].into_iter().find(|g| g.oid() == oid)
    }

    /// The canonical output text of an input text (22P02 when malformed).
    pub fn canonical(self, text: &str) -> Result<String> {
        let bad = || err!(InvalidText, "invalid input syntax for type {}: \"{}\"", self.name(), text);
        let mut p = Scanner { s: text.as_bytes(), at: 0 };
        let out = match self {
            Geo::Point => {
                let (x, y) = p.pair().ok_or_else(bad)?;
                pair_text(x, y)
            }
            Geo::Lseg | Geo::Box => {
                let (pts, _) = p.points(Some(2)).ok_or_else(bad)?;
                if self == Geo::Lseg {
                    format!("[{},{}]", pair_text(pts[0].0, pts[0].1), pair_text(pts[1].0, pts[1].1))
                } else {
                    let (a, b) = (pts[0], pts[1]);
                    let (hx, lx) = if a.0 >= b.0 { (a.0, b.0) } else { (b.0, a.0) };
                    let (hy, ly) = if a.1 >= b.1 { (a.1, b.1) } else { (b.1, a.1) };
                    format!("{},{}", pair_text(hx, hy), pair_text(lx, ly))
                }
            }
            Geo::Path => {
                let (pts, open) = p.points(None).ok_or_else(bad)?;
                let inner: Vec<String> = pts.iter().map(|&(x, y)| pair_text(x, y)).collect();
                if open {
                    format!("[{}]", inner.join(","))
                } else {
                    format!("({})", inner.join(","))
                }
            }
        };
        if !p.at_end() {
            return Err(bad());
        }
        Ok(out)
    }
}

fn pair_text(x: f64, y: f64) -> String {
    format!("({},{})", super::format_f64(x), super::format_f64(y))
}

/// A cursor over an input text (PostgreSQL's pair_decode / path_decode).
struct Scanner<'a> {
    s: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.at == self.s.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.at).copied()
    }

    /// One coordinate (float8in's forms).
    fn number(&mut self) -> Option<f64> {
        self.skip_ws();
        let start = self.at;
        while self.at < self.s.len() && !matches!(self.s[self.at], b',' | b')' | b']' | b'(' | b'[') {
            self.at += 1;
        }
        let t = std::str::from_utf8(&self.s[start..self.at]).ok()?.trim();
        if t.is_empty() {
            return None;
        }
        t.parse::<f64>().ok()
    }

    /// `x,y` or `(x,y)`.
    fn pair(&mut self) -> Option<(f64, f64)> {
        let paren = self.eat(b'(');
        let x = self.number()?;
        if !self.eat(b',') {
            return None;
        }
        let y = self.number()?;
        if paren && !self.eat(b')') {
            return None;
        }
        Some((x, y))
    }

    /// A list of points with PostgreSQL's optional delimiters: `[…]` is an
    /// open path, `(…)` around the points or none a closed one. `n`: the
    /// exact number of points wanted.
    fn points(&mut self, n: Option<usize>) -> Option<(Vec<(f64, f64)>, bool)> {
        self.skip_ws();
        let mut open = false;
        let mut close: Option<u8> = None;
        if self.eat(b'[') {
            open = true;
            close = Some(b']');
        } else if self.peek() == Some(b'(') {
            // `((x,y),…)`: outer parentheses when a second `(` follows.
            let save = self.at;
            self.at += 1;
            if self.peek() == Some(b'(') {
                close = Some(b')');
            } else {
                self.at = save;
            }
        }
        let mut pts = Vec::new();
        loop {
            pts.push(self.pair()?);
            if n.is_some_and(|n| pts.len() == n) {
                break;
            }
            if !self.eat(b',') {
                break;
            }
        }
        if n.is_some_and(|n| pts.len() != n) {
            return None;
        }
        if let Some(c) = close {
            if !self.eat(c) {
                return None;
            }
        }
        Some((pts, open))
    }
}

#[cfg(test)]
mod tests {
    use super::Geo;

    #[test]
    fn points() {
        assert_eq!(Geo::Point.canonical("(0.0,0.0)").unwrap(), "(0,0)");
        assert_eq!(Geo::Point.canonical(" ( Nan , NaN ) ").unwrap(), "(NaN,NaN)");
        assert_eq!(Geo::Point.canonical("10.0,10.0").unwrap(), "(10,10)");
        assert_eq!(Geo::Point.canonical("(1e+300,Inf)").unwrap(), "(1e+300,Infinity)");
        assert_eq!(Geo::Point.canonical("(5.1, 34.5)").unwrap(), "(5.1,34.5)");
        assert!(Geo::Point.canonical("asdfasdf").is_err());
        assert!(Geo::Point.canonical("(10.0 10.0)").is_err());
        assert!(Geo::Point.canonical("(10.0,10.0) x").is_err());
    }

    #[test]
    fn paths_boxes_segments() {
        assert_eq!(Geo::Path.canonical("[(1,2),(3,4)]").unwrap(), "[(1,2),(3,4)]");
        assert_eq!(Geo::Path.canonical("((1,2),(3,4))").unwrap(), "((1,2),(3,4))");
        assert_eq!(Geo::Path.canonical("(1,2),(3,4)").unwrap(), "((1,2),(3,4))");
        assert_eq!(Geo::Path.canonical("1,2,3,4").unwrap(), "((1,2),(3,4))");
        assert_eq!(Geo::Box.canonical("(1,2),(3,4)").unwrap(), "(3,4),(1,2)");
        assert_eq!(Geo::Lseg.canonical("(1,2),(3,4)").unwrap(), "[(1,2),(3,4)]");
        assert!(Geo::Path.canonical("[(1,2),(3,4)").is_err());
    }
}
