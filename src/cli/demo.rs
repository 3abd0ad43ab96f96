//! `tidemark demo`

use super::Globals;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_g: &Globals, _a: Args) -> anyhow::Result<u8> {
    Ok(0)
}
