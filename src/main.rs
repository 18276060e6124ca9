//! `weir`: start the server.

use std::path::PathBuf;

use clap::Parser;

/// weir: a time-series database that speaks the PostgreSQL protocol.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Config file (TOML); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Data directory (default: ./weir-data).
    #[arg(long)]
    data_dir: Option<String>,
    /// Address to listen on, HOST:PORT (port 0 picks a free one).
    #[arg(long)]
    listen: Option<String>,
    /// Name of the superuser the first start creates (default: weir).
    #[arg(long)]
    superuser: Option<String>,
    /// Authentication rules in pg_hba.conf format.
    #[arg(long)]
    hba_file: Option<String>,
    /// TLS certificate chain (PEM).
    #[arg(long)]
    ssl_cert_file: Option<String>,
    /// TLS private key (PEM).
    #[arg(long)]
    ssl_key_file: Option<String>,
    /// Prometheus metrics over HTTP on HOST:PORT (GET /metrics).
    #[arg(long)]
    metrics_listen: Option<String>,
}

/// Fix glibc's mmap threshold. By default it rises to the size of the
/// largest mapped block freed (up to 32 MiB), after which the multi-MiB
/// column buffers of loads, flushes and scans come from the per-thread
/// arenas, where freed space stays resident: a 1.5 M-row COPY peaked at
/// 602 MiB with the default and 219 MiB with the threshold fixed at
/// 256 KiB (`MALLOC_MMAP_THRESHOLD_=262144`, debug build,
/// scripts/bench/memory.py). Setting it explicitly also stops the
/// dynamic adjustment; large buffers are then mapped and unmapped, given
/// back to the system when freed. The environment variable, when set,
/// wins.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn fix_malloc_mmap_threshold() {
    extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_MMAP_THRESHOLD: i32 = -3;
    /// Bytes from which malloc maps an allocation of its own.
    const MMAP_THRESHOLD_BYTES: i32 = 256 << 10;
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only sets a malloc tunable; it is called once,
        // before any thread other than this one exists.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fix_malloc_mmap_threshold() {}

fn main() -> anyhow::Result<()> {
    fix_malloc_mmap_threshold();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("WEIR_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = match &args.config {
        Some(p) => weir::config::Config::load(p)?,
        None => weir::config::Config::default(),
    };
    if let Some(d) = args.data_dir {
        config.data_dir = d;
    }
    if let Some(l) = args.listen {
        config.listen = l;
    }
    if let Some(m) = args.metrics_listen {
        config.metrics_listen = m;
    }
    if let Some(u) = args.superuser {
        config.superuser = u;
    }
    if let Some(h) = args.hba_file {
        config.hba_file = h;
    }
    if let Some(c) = args.ssl_cert_file {
        config.ssl_cert_file = c;
    }
    if let Some(k) = args.ssl_key_file {
        config.ssl_key_file = k;
    }
    // Deeply nested expressions recurse through parser, binder and evaluator:
    // give worker threads room (64 MiB, a guess that covers the SQLite corpus).
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().thread_stack_size(64 << 20).build()?;
    rt.block_on(async move {
        let listen = config.listen.clone();
        let metrics_listen = config.metrics_listen.clone();
        let data_dir = config.data_dir.clone();
        let engine = match weir::sql::Engine::open(config) {
            Ok(e) => e,
            Err(e) => {
                // A clear message and a non-zero exit, never a panic.
                eprintln!("weir: cannot open data directory {data_dir}: {}", e.message);
                if let Some(d) = &e.detail {
                    eprintln!("DETAIL: {d}");
                }
                if let Some(h) = &e.hint {
                    eprintln!("HINT: {h}");
                }
                std::process::exit(1);
            }
        };
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        let addr = listener.local_addr()?;
        println!("weir listening on {addr}");
        use std::io::Write;
        std::io::stdout().flush()?;
        tracing::info!(%addr, data_dir, "weir started");
        if !metrics_listen.is_empty() {
            let ml = tokio::net::TcpListener::bind(&metrics_listen).await?;
            let maddr = ml.local_addr()?;
            println!("weir metrics on http://{maddr}/metrics");
            std::io::stdout().flush()?;
            let e = engine.clone();
            tokio::spawn(async move {
                if let Err(err) = weir::server::metrics::serve(e, ml).await {
                    tracing::warn!(error = %err, "metrics listener stopped");
                }
            });
        }
        let shutdown = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            tracing::info!("shutting down");
        };
        weir::server::serve(engine, listener, shutdown).await?;
        Ok::<_, anyhow::Error>(())
    })
}
