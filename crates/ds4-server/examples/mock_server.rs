//! DEV ONLY: the HTTP server on the scripted test engine of tests/common, to
//! exercise client SDKs without a model. Not built into the shipped binary.
//! `cargo run -p ds4-server --example mock_server -- --port 8123`

use clap::Parser;
use std::sync::Arc;

#[path = "../tests/common/mock.rs"]
mod mock;

fn main() {
    let args = ds4_server::config::Args::parse();
    let m = mock::Mock { ctx: args.ctx, toks: vec![], logits: vec![0.0; mock::VOCAB], d: Default::default() };
    std::process::exit(ds4_server::server::run(&args, m, Arc::new(mock::Codec), Arc::new(mock::TestRender), None));
}
