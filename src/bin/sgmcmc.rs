//! The `sgmcmc` binary.

fn main() {
    std::process::exit(sgmcmc_apps::run(std::env::args_os()));
}
