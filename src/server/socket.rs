//! One client socket: pgwire's TLS negotiation, then its message loop (as
//! `pgwire::tokio::process_socket` runs it), with one addition: after the
//! handshake the negotiated TLS version and cipher are read from rustls and
//! handed to the connection, so `pg_stat_ssl` shows each session's facts;
//! and another: while the session is idle (its last message was answered
//! with ReadyForQuery, outside a transaction block) the notifications
//! queued in its LISTEN mailbox go out as NotificationResponse messages,
//! at once when they arrive, as PostgreSQL sends them.
//!
//! Part of `server`: may import `sql`, `exec`, `notify`, `error`.

use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState, PgWireServerHandlers};
use pgwire::messages::response::{NotificationResponse, TransactionStatus};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message, MaybeTls};
use tokio::net::TcpStream;

use crate::exec::activity::SslInfo;

/// pgwire's startup timeout: a client must finish authenticating in it.
const STARTUP_TIMEOUT_MS: u64 = 60_000;

/// OpenSSL's name and the key bits of a rustls cipher suite (PostgreSQL
/// reports OpenSSL's names).
fn cipher_facts(suite: rustls::CipherSuite) -> (String, i32) {
    use rustls::CipherSuite as C;
    let (name, bits) = match suite {
        C::TLS13_AES_256_GCM_SHA384 => ("TLS_AES_256_GCM_SHA384", 256),
        C::TLS13_AES_128_GCM_SHA256 => ("TLS_AES_128_GCM_SHA256", 128),
        C::TLS13_CHACHA20_POLY1305_SHA256 => ("TLS_CHACHA20_POLY1305_SHA256", 256),
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => ("ECDHE-ECDSA-AES256-GCM-SHA384", 256),
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => ("ECDHE-ECDSA-AES128-GCM-SHA256", 128),
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => ("ECDHE-ECDSA-CHACHA20-POLY1305", 256),
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => ("ECDHE-RSA-AES256-GCM-SHA384", 256),
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => ("ECDHE-RSA-AES128-GCM-SHA256", 128),
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => ("ECDHE-RSA-CHACHA20-POLY1305", 256),
        other => return (format!("{other:?}"), 0),
    };
    (name.to_string(), bits)
}

/// The TLS facts of a negotiated stream (None: not encrypted).
fn ssl_info(io: &MaybeTls) -> Option<SslInfo> {
    let MaybeTls::Tls(tls) = io else { return None };
    let (_, conn) = tls.get_ref();
    let version = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
        Some(v) => format!("{v:?}"),
        None => String::new(),
    };
    let (cipher, bits) = conn.negotiated_cipher_suite().map(|s| cipher_facts(s.suite())).unwrap_or_default();
    Some(SslInfo { version, cipher, bits })
}

/// Serve one TCP client: TLS negotiation, then messages until it leaves.
/// `on_tls` gets the session's TLS facts before the startup message.
pub async fn process_socket<H: PgWireServerHandlers>(
    tcp: TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
    on_tls: impl FnOnce(Option<SslInfo>),
    mailbox: Arc<crate::notify::Mailbox>,
) -> std::io::Result<()> {
    let startup_timeout = tokio::time::sleep(std::time::Duration::from_millis(STARTUP_TIMEOUT_MS));
    tokio::pin!(startup_timeout);
    let socket = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        socket = negotiate_tls(tcp, tls) => socket?,
    };
    // A direct TLS request without TLS configured: nothing to serve.
    let Some(mut socket) = socket else { return Ok(()) };
    on_tls(ssl_info(socket.get_ref()));

    let startup_handler = handlers.startup_handler();
    let simple_query_handler = handlers.simple_query_handler();
    let extended_query_handler = handlers.extended_query_handler();
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    let error_handler = handlers.error_handler();
    // The last message was answered with ReadyForQuery: notifications may go.
    let mut ready = false;
    loop {
        let msg = if matches!(socket.state(), PgWireConnectionState::AwaitingStartup | PgWireConnectionState::AuthenticationInProgress) {
            tokio::select! {
                _ = &mut startup_timeout => None,
                msg = socket.next() => msg,
            }
        } else {
            loop {
                let idle = ready
                    && matches!(socket.state(), PgWireConnectionState::ReadyForQuery)
                    && matches!(socket.transaction_status(), TransactionStatus::Idle);
                if idle {
                    let notes = mailbox.take();
                    if !notes.is_empty() {
                        for n in notes {
                            let m = NotificationResponse::new(n.pid, n.channel, n.payload);
                            socket.feed(PgWireBackendMessage::NotificationResponse(m)).await.map_err(std::io::Error::other)?;
                        }
                        socket.flush().await.map_err(std::io::Error::other)?;
                    }
                }
                // Reading a frame is cancel-safe (a partial one stays buffered).
                tokio::select! {
                    msg = socket.next() => break msg,
                    _ = mailbox.wake.notified(), if idle => {}
                }
            }
        };
        let Some(Ok(msg)) = msg else { break };
        ready = matches!(
            msg,
            PgWireFrontendMessage::Query(_)
                | PgWireFrontendMessage::Sync(_)
                | PgWireFrontendMessage::Startup(_)
                | PgWireFrontendMessage::PasswordMessageFamily(_)
                | PgWireFrontendMessage::CopyDone(_)
                | PgWireFrontendMessage::CopyFail(_)
        );
        // Terminate: the client is leaving; drop the socket (asyncpg waits
        // for the close).
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => msg.is_extended_query(),
        };
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        if let Err(mut e) = process_message(
            msg,
            &mut socket,
            startup_handler.clone(),
            simple_query_handler.clone(),
            extended_query_handler.clone(),
            copy_handler.clone(),
            cancel_handler.clone(),
        )
        .await
        {
            use pgwire::api::ErrorHandler;
            error_handler.on_error(&socket, &mut e);
            // A FATAL error ends the session, as in PostgreSQL.
            let is_fatal = e.is_fatal();
            process_error(&mut socket, e, is_extended_query).await?;
            if is_fatal {
                break;
            }
        }
        if is_cancel_request {
            break;
        }
    }
    Ok(())
}
