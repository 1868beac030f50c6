//! `aether-cluster`: aether's roles in an Apache DataFusion Ballista 55 cluster, for cross-log
//! SQL over a fleet warehouse. `scheduler` and `executor` are Ballista's own, with aether's
//! functions registered on both (the stock executor cannot run aether SQL) and S3 resolved as
//! aether resolves it; `sql` plans a query on the client and runs it on the cluster. The `aether`
//! binary runs this one for `aether cluster scheduler|executor` and `aether sql --cluster`.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand, ValueEnum};

mod roles;

#[derive(Parser)]
#[command(
    name = "aether-cluster",
    version,
    about = "aether's Ballista cluster roles"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// A Ballista scheduler that plans aether SQL (listens for clients and executors).
    Scheduler {
        /// The address to listen on.
        #[arg(long, default_value = "0.0.0.0")]
        bind: String,
        /// The gRPC port clients (df://host:port) and executors connect to.
        #[arg(long, default_value_t = 50050)]
        port: u16,
        /// The host name executors and clients are told to reach this scheduler at.
        #[arg(long = "external_host", alias = "external-host")]
        external_host: Option<String>,
        #[command(flatten)]
        s3: S3Args,
    },
    /// A Ballista executor that runs aether SQL's tasks (reads the warehouse, shuffles).
    Executor {
        /// The scheduler, host:port.
        #[arg(long, default_value = "127.0.0.1:50050")]
        scheduler: String,
        /// The address to listen on.
        #[arg(long, default_value = "0.0.0.0")]
        bind: String,
        /// The host name other executors and clients fetch shuffle data from (default: the
        /// bind address, or localhost when binding every address).
        #[arg(long = "external_host", alias = "external-host")]
        external_host: Option<String>,
        /// The Arrow Flight port (shuffle data).
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// The gRPC port (tasks from the scheduler).
        #[arg(long = "grpc_port", alias = "grpc-port", default_value_t = 50052)]
        grpc_port: u16,
        /// Tasks run at once (default: all cores).
        #[arg(long, default_value_t = 0)]
        tasks: usize,
        /// Where shuffle files go (default: a temporary directory).
        #[arg(long = "work_dir", alias = "work-dir")]
        work_dir: Option<String>,
        /// Memory for query operators, MiB (default: Ballista's share of the machine).
        #[arg(long = "memory_mb", alias = "memory-mb")]
        memory_mb: Option<u64>,
        #[command(flatten)]
        s3: S3Args,
    },
    /// Run one SQL query on a cluster, over a warehouse (its tables, `derived.*` and aether's
    /// views).
    Sql {
        /// The scheduler: df://host:port.
        #[arg(long)]
        cluster: String,
        /// The warehouse (a directory every executor sees, or s3://bucket/prefix).
        #[arg(long)]
        warehouse: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        #[command(flatten)]
        s3: S3Args,
        /// The query.
        query: String,
    },
}

#[derive(clap::Args, Clone, Default)]
struct S3Args {
    /// S3 region (else the AWS environment's).
    #[arg(long = "s3_region", alias = "s3-region")]
    s3_region: Option<String>,
    /// A custom S3 endpoint, e.g. http://127.0.0.1:5000 (else $AWS_ENDPOINT_URL_S3 or
    /// $AWS_ENDPOINT_URL).
    #[arg(long = "s3_endpoint", alias = "s3-endpoint")]
    s3_endpoint: Option<String>,
}

impl S3Args {
    fn options(&self) -> aether_ingest::S3Options {
        aether_ingest::S3Options {
            region: self.s3_region.clone(),
            endpoint: self.s3_endpoint.clone(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
}

impl From<Format> for aether_engine::OutputFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Table => aether_engine::OutputFormat::Table,
            Format::Csv => aether_engine::OutputFormat::Csv,
            Format::Json => aether_engine::OutputFormat::Json,
        }
    }
}

/// Stack of every runtime thread: decoding and planning aether's deepest plans recurses far
/// deeper than tokio's 2 MiB default.
const STACK: usize = 32 << 20;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(STACK)
        .enable_all()
        .build()
        .context("a tokio runtime")
}

fn host_port(s: &str) -> Result<(String, u16)> {
    let (h, p) = s
        .rsplit_once(':')
        .ok_or_else(|| anyhow!("{s}: expected host:port"))?;
    let port = p.parse().map_err(|_| anyhow!("{s}: bad port {p:?}"))?;
    Ok((h.to_string(), port))
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Scheduler {
            bind,
            port,
            external_host,
            s3,
        } => {
            let addr: SocketAddr = format!("{bind}:{port}")
                .parse()
                .map_err(|e| anyhow!("--bind {bind} --port {port}: {e}"))?;
            let cfg = roles::scheduler_config(&bind, port, external_host, s3.options());
            runtime()?.block_on(roles::scheduler(cfg, addr))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Executor {
            scheduler,
            bind,
            external_host,
            port,
            grpc_port,
            tasks,
            work_dir,
            memory_mb,
            s3,
        } => {
            let (scheduler_host, scheduler_port) = host_port(&scheduler)?;
            let work_dir = work_dir.unwrap_or_else(|| {
                std::env::temp_dir()
                    .join(format!("aether-executor-{}-{port}", std::process::id()))
                    .display()
                    .to_string()
            });
            std::fs::create_dir_all(&work_dir)
                .with_context(|| format!("work directory {work_dir}"))?;
            let cfg = roles::executor_config(roles::ExecutorSpec {
                scheduler_host,
                scheduler_port,
                bind,
                external_host,
                port,
                grpc_port,
                tasks,
                work_dir,
                memory_bytes: memory_mb.map(|m| m << 20),
                s3: s3.options(),
            })?;
            runtime()?.block_on(roles::executor(cfg))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sql {
            cluster,
            warehouse,
            format,
            s3,
            query,
        } => {
            if !cluster.starts_with("df://") {
                bail!("--cluster {cluster}: expected df://host:port");
            }
            let rt = runtime()?;
            let res = rt.block_on(async {
                let ctx = roles::client(&cluster, &warehouse, &s3.options()).await?;
                let (schema, batches) = aether_engine::query(&ctx, &query)
                    .await
                    .map_err(|e| anyhow!("query failed: {e}"))?;
                anyhow::Ok(aether_engine::render(&schema, &batches, format.into())?)
            });
            match res {
                Ok(text) => {
                    println!("{}", text.trim_end());
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}

fn main() -> ExitCode {
    aether_core::init_tracing();
    // threads Ballista and DataFusion spawn themselves get the same stack as the runtime's
    if std::env::var_os("RUST_MIN_STACK").is_none() {
        // SAFETY: no other thread runs yet
        unsafe { std::env::set_var("RUST_MIN_STACK", STACK.to_string()) };
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
