use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Checkpoint to inspect.
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let ckpt = ckpt::torch::open(&args.file).map_err(|e| Failure::about(&args.file, e))?;
    let report = ckpt::report::inspect(&ckpt).map_err(|e| Failure::about(&args.file, e))?;
    if args.json {
        println!("{report}");
    } else {
        print!("{}", ckpt::report::render_text(&report));
    }
    Ok(())
}
