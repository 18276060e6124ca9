//! TDengine stream notifications (`NOTIFY('ws://…') ON (…)
//! NOTIFY_OPTIONS(…)`): the JSON messages TDengine documents (`messageId`,
//! `timestamp`, `streams[{streamName, events[…]}]`), delivered over
//! WebSocket, TDengine's only transport, by a minimal RFC 6455 client:
//! the opening handshake (checked `Sec-WebSocket-Accept`), the message as
//! masked text frames of at most `FRAME_BYTES`, then a close frame. One
//! connection per delivery; `wss://` runs it over rustls (ring), trusting
//! the system's certificates (`SSL_CERT_FILE`, else the usual bundle). A `pg://channel` target
//! publishes the same messages as PostgreSQL NOTIFY payloads on that
//! channel instead (each under PostgreSQL's 8000-byte limit).
//!
//! May import `error`, `types`, `notify` (and `ring` / `base64` / `serde_json`);
//! never `sql`, `server`, `planner` or `exec`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Map, Value as Json};

use crate::error::Result;
use crate::types::Value;
use crate::{bail, err};

/// TDengine's `streamNotifyFrameSize` default (256 KiB).
pub const FRAME_BYTES: usize = 256 * 1024;
/// How long connecting, the handshake and sending may take.
pub const TIMEOUT: Duration = Duration::from_secs(3);
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// One event of a stream (TDengine's field names).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub table_name: String,
    /// `WINDOW_OPEN`, `WINDOW_CLOSE` or `ON_TIME` (PERIOD, plain SLIDING).
    pub event_type: &'static str,
    pub event_time_ms: i64,
    /// Stable across restarts: stream id, group id and window start.
    pub trigger_id: String,
    /// `Period`, `Sliding`, `Interval`, `Session`, `State`, `Event`, `Count`.
    pub trigger_type: &'static str,
    pub group_id: String,
    pub window_start_ms: Option<i64>,
    pub window_end_ms: Option<i64>,
    /// WINDOW_CLOSE / ON_TIME: the computation's row (column → value).
    pub result: Option<Map<String, Json>>,
}

impl Event {
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        m.insert("tableName".into(), json!(self.table_name));
        m.insert("eventType".into(), json!(self.event_type));
        m.insert("eventTime".into(), json!(self.event_time_ms));
        m.insert("triggerId".into(), json!(self.trigger_id));
        m.insert("triggerType".into(), json!(self.trigger_type));
        m.insert("groupId".into(), json!(self.group_id));
        if let Some(s) = self.window_start_ms {
            m.insert("windowStart".into(), json!(s));
        }
        if let Some(e) = self.window_end_ms {
            m.insert("windowEnd".into(), json!(e));
        }
        if let Some(r) = &self.result {
            m.insert("result".into(), Json::Object(r.clone()));
        }
        Json::Object(m)
    }
}

/// A value in a result object: numbers as numbers, timestamps as epoch
/// milliseconds (TDengine's), the rest as text.
pub fn json_value(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) if f.is_finite() => json!(f),
        Value::Timestamp(us) => json!(us.div_euclid(1000)),
        Value::Text(s) => json!(s),
        other => json!(crate::types::format_value(other)),
    }
}

/// The message of one delivery.
pub fn message(message_id: &str, now_ms: i64, stream: &str, events: &[Event]) -> String {
    json!({
        "messageId": message_id,
        "timestamp": now_ms,
        "streams": [{ "streamName": stream, "events": events.iter().map(Event::to_json).collect::<Vec<_>>() }],
    })
    .to_string()
}

/// A parsed `ws://` / `wss://` URL.
#[derive(Debug, PartialEq, Eq)]
struct WsUrl {
    /// host:port to connect to.
    addr: String,
    /// The Host header (host[:port] as written).
    authority: String,
    /// The host alone (the TLS server name).
    host: String,
    path: String,
    tls: bool,
}

/// `ws[s]://host[:port][/path]`.
fn parse_url(url: &str) -> Result<WsUrl> {
    let (rest, tls) = match (url.strip_prefix("ws://"), url.strip_prefix("wss://")) {
        (Some(r), _) => (r, false),
        (_, Some(r)) => (r, true),
        _ => bail!(FeatureNotSupported, "NOTIFY supports ws:// and wss:// URLs (TDengine's WebSocket transport) and pg://channel: {url}"),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.is_empty() {
        bail!(InvalidParameterValue, "Invalid NOTIFY URL: {url}");
    }
    let (host, addr) = match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, authority.to_string()),
        _ => (authority, format!("{authority}:{}", if tls { 443 } else { 80 })),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    Ok(WsUrl { addr, authority: authority.to_string(), host, path, tls })
}

/// The TLS client for `wss://`: the system's trust store (`SSL_CERT_FILE`,
/// else the usual bundle paths), read once.
fn tls_config() -> Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<std::result::Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            use rustls::pki_types::pem::PemObject;
            use rustls::pki_types::CertificateDer;
            let env = std::env::var("SSL_CERT_FILE").ok().filter(|p| !p.is_empty());
            let paths: Vec<String> = match env {
                Some(p) => vec![p],
                None => ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            };
            let mut roots = rustls::RootCertStore::empty();
            for p in &paths {
                let Ok(certs) = CertificateDer::pem_file_iter(p) else { continue };
                for c in certs.flatten() {
                    let _ = roots.add(c);
                }
            }
            if roots.is_empty() {
                return Err(format!("no trusted certificates in {} (set SSL_CERT_FILE)", paths.join(", ")));
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let cfg = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Ok(Arc::new(cfg))
        })
        .clone()
        .map_err(|e| err!(ConnectionFailure, "NOTIFY over wss://: {e}"))
}

/// A connection to a NOTIFY server: plain TCP or TLS over it.
trait Io: Read + Write {}
impl<T: Read + Write> Io for T {}

/// Where a NOTIFY target sends: a WebSocket URL, or (`pg://channel`,
/// weir's own) a PostgreSQL channel that any client can LISTEN on.
#[derive(Debug, PartialEq, Eq)]
pub enum Target<'a> {
    Ws(&'a str),
    Channel(&'a str),
}

/// A NOTIFY target of CREATE STREAM, checked.
pub fn target(url: &str) -> Result<Target<'_>> {
    if let Some(channel) = url.strip_prefix("pg://") {
        crate::notify::check(channel, "")?;
        return Ok(Target::Channel(channel));
    }
    parse_url(url).map(|_| Target::Ws(url))
}

/// Check a NOTIFY URL at CREATE STREAM.
pub fn check_url(url: &str) -> Result<()> {
    target(url).map(|_| ())
}

/// A delivery's events as PostgreSQL NOTIFY payloads, each shorter than
/// PostgreSQL's limit (8000 bytes): as many events per message as fit,
/// each message with its own id (`{message_id}.{n}` after the first).
/// Events too big for any payload come back apart (undeliverable).
pub fn channel_messages(message_id: &str, now_ms: i64, stream: &str, events: &[Event]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut dropped = 0;
    let mut start = 0;
    while start < events.len() {
        let id = if out.is_empty() { message_id.to_string() } else { format!("{message_id}.{}", out.len()) };
        // The longest run of events from `start` whose message fits.
        let mut best = None;
        let mut end = start + 1;
        while end <= events.len() {
            let m = message(&id, now_ms, stream, &events[start..end]);
            if m.len() >= crate::notify::PAYLOAD_MAX {
                break;
            }
            best = Some((end, m));
            end += 1;
        }
        match best {
            Some((end, m)) => {
                out.push(m);
                start = end;
            }
            None => {
                dropped += 1;
                start += 1;
            }
        }
    }
    (out, dropped)
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).map_err(|_| err!(Internal, "no random bytes"))?;
    Ok(b)
}

/// One client frame (masked, as RFC 6455 requires of clients).
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Result<Vec<u8>> {
    let mut f = Vec::with_capacity(payload.len() + 14);
    f.push(if fin { 0x80 } else { 0 } | opcode);
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n if n <= u16::MAX as usize => {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let mask: [u8; 4] = random()?;
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    Ok(f)
}

/// The `Sec-WebSocket-Accept` a server answers to `key`.
pub fn accept_key(key: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, format!("{key}{GUID}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(d.as_ref())
}

/// Deliver one text message to a `ws://` or `wss://` URL.
pub fn send(url: &str, text: &str) -> Result<()> {
    let u = parse_url(url)?;
    let io = |e: std::io::Error| err!(ConnectionFailure, "NOTIFY {url}: {e}");
    let sock = u.addr.to_socket_addrs().map_err(io)?.next().ok_or_else(|| err!(ConnectionFailure, "NOTIFY {url}: no address"))?;
    let tcp = TcpStream::connect_timeout(&sock, TIMEOUT).map_err(io)?;
    tcp.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    tcp.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    let mut s: Box<dyn Io> = if u.tls {
        let name = rustls::pki_types::ServerName::try_from(u.host.clone())
            .map_err(|e| err!(InvalidParameterValue, "NOTIFY {url}: bad server name: {e}"))?;
        let conn = rustls::ClientConnection::new(tls_config()?, name).map_err(|e| err!(ConnectionFailure, "NOTIFY {url}: {e}"))?;
        Box::new(rustls::StreamOwned::new(conn, tcp))
    } else {
        Box::new(tcp)
    };
    let (host, path) = (&u.authority, &u.path);
    let key = base64::engine::general_purpose::STANDARD.encode(random::<16>()?);
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(req.as_bytes()).map_err(io)?;
    // The response head, byte by byte up to the blank line (frames follow).
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 || s.read(&mut b).map_err(io)? == 0 {
            bail!(ConnectionFailure, "NOTIFY {url}: the server closed the WebSocket handshake");
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("101") {
        bail!(ConnectionFailure, "NOTIFY {url}: WebSocket handshake refused: {status}");
    }
    let want = accept_key(&key);
    let accepted =
        lines.filter_map(|l| l.split_once(':')).any(|(k, v)| k.trim().eq_ignore_ascii_case("sec-websocket-accept") && v.trim() == want);
    if !accepted {
        bail!(ConnectionFailure, "NOTIFY {url}: bad Sec-WebSocket-Accept");
    }
    let bytes = text.as_bytes();
    let chunks: Vec<&[u8]> = if bytes.is_empty() { vec![bytes] } else { bytes.chunks(FRAME_BYTES).collect() };
    let n = chunks.len();
    for (i, c) in chunks.into_iter().enumerate() {
        let opcode = if i == 0 { 1 } else { 0 };
        s.write_all(&frame(i + 1 == n, opcode, c)?).map_err(io)?;
    }
    s.write_all(&frame(true, 8, &1000u16.to_be_bytes())?).map_err(io)?;
    s.flush().map_err(io)?;
    // The server's close frame, if it answers (not required).
    let _ = s.read(&mut [0u8; 64]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_messages_fit_postgres_payloads() {
        let ev = |i: i64| Event {
            table_name: "t".into(),
            event_type: "WINDOW_CLOSE",
            event_time_ms: i,
            trigger_id: format!("1-2-{i}"),
            trigger_type: "Interval",
            group_id: "2".into(),
            window_start_ms: Some(i),
            window_end_ms: Some(i + 1),
            result: None,
        };
        let events: Vec<Event> = (0..200).map(ev).collect();
        let (msgs, dropped) = channel_messages("7-1", 0, "db.s", &events);
        assert_eq!(dropped, 0);
        assert!(msgs.len() > 1 && msgs.iter().all(|m| m.len() < crate::notify::PAYLOAD_MAX));
        let n: usize =
            msgs.iter().map(|m| serde_json::from_str::<Json>(m).unwrap()["streams"][0]["events"].as_array().unwrap().len()).sum();
        assert_eq!(n, 200);
        let mut big = ev(0);
        big.result = Some([("x".to_string(), json!("y".repeat(9000)))].into_iter().collect());
        assert_eq!(channel_messages("7-2", 0, "db.s", &[big, ev(1)]).1, 1);
        assert_eq!(target("pg://ch").unwrap(), Target::Channel("ch"));
        assert!(target("pg://").is_err());
    }

    #[test]
    fn urls_and_accept_key() {
        let u = parse_url("ws://h:8080/n?x=1").unwrap();
        assert_eq!(
            (u.addr.as_str(), u.authority.as_str(), u.host.as_str(), u.path.as_str(), u.tls),
            ("h:8080", "h:8080", "h", "/n?x=1", false)
        );
        let u = parse_url("ws://h").unwrap();
        assert_eq!((u.addr.as_str(), u.path.as_str()), ("h:80", "/"));
        let u = parse_url("wss://127.0.0.1/x").unwrap();
        assert_eq!((u.addr.as_str(), u.host.as_str(), u.tls), ("127.0.0.1:443", "127.0.0.1", true));
        assert!(parse_url("http://h/").is_err());
        // RFC 6455's example.
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn frames_are_masked_with_their_length() {
        let f = frame(true, 1, b"hi").unwrap();
        assert_eq!(f[0], 0x81);
        assert_eq!(f[1], 0x82);
        let mask = &f[2..6];
        assert_eq!([f[6] ^ mask[0], f[7] ^ mask[1]], *b"hi");
        let f = frame(false, 0, &[0u8; 300]).unwrap();
        assert_eq!((f[0], f[1], u16::from_be_bytes([f[2], f[3]])), (0x00, 0x80 | 126, 300));
    }
}
