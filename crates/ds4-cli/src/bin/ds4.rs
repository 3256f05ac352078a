//! `ds4`: DeepSeek V4 Flash on the local engine (CLI.md). The logic lives in
//! the `ds4_cli` library so tests can drive it.

fn main() {
    std::process::exit(ds4_cli::main_entry());
}
