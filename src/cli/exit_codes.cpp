// exit_codes.cpp — the exit codes of every leaf command, read off the code
// named in `where`. When a command's returns change, change its entry here
// and regenerate docs/cli.md (`moetrain cli-reference > docs/cli.md`).
#include "cli/exit_codes.h"

#include <algorithm>

#include "train/task_families.h"

namespace mt {

namespace {

// The verifiable task families share one set of returns: inserted after the
// passkey's entry, as main.cpp registers them.
std::vector<CommandExitCodes> with_task_families(std::vector<CommandExitCodes> v) {
  auto at =
      std::find_if(v.begin(), v.end(), [](const CommandExitCodes& c) { return c.command == "tasks make passkey"; });
  at = at == v.end() ? at : at + 1;
  std::vector<CommandExitCodes> families;
  for (const std::string& f : task_families())
    families.push_back(
        {"tasks make " + f,
         "src/cli/cmd_tasks.cpp (run_family)",
         {{ExitCode::kFailed, "the task file (`--out`) cannot be written"},
          {ExitCode::kUsage,
           "neither `--out` nor `--documents`; knobs that leave fewer distinct problems of the split than `--n` "
           "(the message names how many it found); a `--documents` directory that exists and is not empty, or "
           "cannot be written"}}});
  v.insert(at, families.begin(), families.end());
  return v;
}

}  // namespace

const std::vector<CommandExitCodes>& command_exit_codes() {
  // Under mpirun, MpiComm's collectives abort the whole job with code 3 when
  // one waits longer than dist.timeout_s (diagnose_timeout); only the
  // commands that build a world communicator (train, bench, doctor) can get there.
  static const std::string kMpiTimeout =
      "under mpirun only: a collective waited longer than `dist.timeout_s`; the job is aborted with "
      "`MPI_Abort(3)` (src/dist/mpi_comm.cpp, `diagnose_timeout`)";
  static const std::vector<CommandExitCodes> kCodes = with_task_families({
      {"train",
       "src/cli/cmd_train.cpp",
       {{ExitCode::kFailed,
         "the trainer could not start or a step failed (run directory, `--resume` without a valid checkpoint, "
         "dataset, distributed layout, diverged loss, checkpoint I/O); under mpirun the failing rank ends the "
         "job with `MPI_Abort(1)`"},
        {ExitCode::kUsage,
         "config or usage error: no such `--preset`, the `--config` file cannot be read or parsed, a bad "
         "`--set`, limits of the trainer (`check_trainer_limits`), a malformed `--inject-fault`, a `--run-dir` "
         "that already holds a run (without `--resume` or `--move-aside`), `--resume` with no saved "
         "`config.toml` and no `--config`, or `--resume` with `--move-aside`"},
        {ExitCode::kRefused, kMpiTimeout},
        {ExitCode::kStoppedBySigint,
         "stopped by Ctrl-C (SIGINT) after finishing the step and committing a checkpoint "
         "there (`--resume` continues); a second signal ends it at once"},
        {ExitCode::kStoppedBySigterm, "stopped by SIGTERM (a scheduler taking the job away), the same way"},
        {ExitCode::kRequeue,
         "stopped by SIGUSR1 (Slurm's advance notice, `--signal=USR1@LEAD`) the same way: \"requeue me\" "
         "(scripts/slurm/common.sh requeues the job on it)"}}},
      {"sft",
       "src/cli/cmd_sft.cpp, src/cli/cmd_train.cpp (run_training)",
       {{ExitCode::kFailed,
         "the trainer could not start or a step failed, as for `train` (among them: `train.init_from`'s "
         "checkpoint cannot be read or has another layout, data.sft's packed rows hold fewer sequences than "
         "train.steps reads)"},
        {ExitCode::kUsage,
         "no `--init`/`--data` (and no run to `--resume`); the checkpoint's config cannot be read; a "
         "malformed example (named as FILE:LINE and field) or `--set`; a `--run-dir` that already holds a run"},
        {ExitCode::kRefused, kMpiTimeout},
        {ExitCode::kStoppedBySigint, "stopped by Ctrl-C (SIGINT) with a checkpoint, as `train` is"},
        {ExitCode::kStoppedBySigterm, "stopped by SIGTERM with a checkpoint, as `train` is"},
        {ExitCode::kRequeue, "stopped by SIGUSR1 with a checkpoint, as `train` is: \"requeue me\""}}},
      {"rl",
       "src/cli/cmd_rl.cpp, src/cli/cmd_train.cpp (run_training)",
       {{ExitCode::kFailed,
         "the trainer could not start or a step failed, as for `train` (among them: `train.init_from`'s or "
         "`rl.reference`'s checkpoint cannot be read, has another layout, vocabulary or tokenizer; a prompt leaves "
         "no room for `rl.max_new_tokens` in a row)"},
        {ExitCode::kUsage,
         "no `--init`/`--tasks` (and no run to `--resume`); the checkpoint's config cannot be read; a "
         "malformed task item (named as FILE:LINE and field) or `--set`; a `--run-dir` that already holds a run"},
        {ExitCode::kRefused, kMpiTimeout},
        {ExitCode::kStoppedBySigint, "stopped by Ctrl-C (SIGINT) with a checkpoint, as `train` is"},
        {ExitCode::kStoppedBySigterm, "stopped by SIGTERM with a checkpoint, as `train` is"},
        {ExitCode::kRequeue, "stopped by SIGUSR1 with a checkpoint, as `train` is: \"requeue me\""}}},
      {"distill",
       "src/cli/cmd_distill.cpp, src/cli/cmd_train.cpp (run_training)",
       {{ExitCode::kFailed,
         "the trainer could not start or a step failed, as for `train` (among them: the student's or "
         "`rl.teacher`'s checkpoint cannot be read, or the teacher has another vocabulary or tokenizer)"},
        {ExitCode::kUsage,
         "no `--init`/`--teacher`/`--tasks` (and no run to `--resume`); a `--mode` other than on_policy, "
         "forward_kl, sft; a malformed task item (named as FILE:LINE and field) or `--set`; a `--run-dir` that "
         "already holds a run"},
        {ExitCode::kRefused, kMpiTimeout},
        {ExitCode::kStoppedBySigint, "stopped by Ctrl-C (SIGINT) with a checkpoint, as `train` is"},
        {ExitCode::kStoppedBySigterm, "stopped by SIGTERM with a checkpoint, as `train` is"},
        {ExitCode::kRequeue, "stopped by SIGUSR1 with a checkpoint, as `train` is: \"requeue me\""}}},
      {"bench",
       "src/cli/cmd_bench.cpp",
       {{ExitCode::kFailed,
         "the trainer could not be created for the preset; under mpirun the job is ended with `MPI_Abort(1)`"},
        {ExitCode::kUsage, "unknown `--preset`, or the preset with the `--set` overrides does not parse"},
        {ExitCode::kRefused, kMpiTimeout}}},
      {"doctor",
       "src/cli/cmd_doctor.cpp",
       {{ExitCode::kFailed,
         "a check failed (the culprit ranks and checks are named on stderr): GEMM off the reference or disagreeing "
         "across ranks, NaN/Inf in its results, a memory pattern read back wrong, a link slower than a quarter of "
         "the median, a clock off rank 0's by more than 0.25 s, a different binary; or a rank did not answer "
         "the link test (the job is ended with `MPI_Abort(1)`)"},
        {ExitCode::kUsage, "a malformed `--inject-fault` (expected `wronggemm:RANK`)"},
        {ExitCode::kRefused, kMpiTimeout}}},
      {"ckpt inspect",
       "src/cli/cmd_ckpt.cpp",
       {{ExitCode::kFailed, "the checkpoint is missing, incomplete or fails validation"}}},
      {"ckpt branch",
       "src/cli/cmd_ckpt.cpp",
       {{ExitCode::kFailed,
         "the checkpoint is missing or fails validation, RUN_DIR already holds a run, or the copy cannot be written"}}},
      {"report",
       "src/cli/cmd_report.cpp",
       {{ExitCode::kFailed,
         "what DIR holds cannot be read (`metrics.jsonl`, `search.json`), or the report cannot be written"},
        {ExitCode::kUsage,
         "a ladder's `results.jsonl` that cannot be read or fitted (as `ladder fit` exits for the same data)"}}},
      {"data build",
       "src/cli/cmd_data.cpp (`run_build`)",
       {{ExitCode::kFailed,
         "the build failed (inputs, tokenizer, output directory exists and is not empty, write errors)"},
        {ExitCode::kUsage, "the `--config` file cannot be read or parsed, or a bad `--set`"}}},
      {"data inspect",
       "src/cli/cmd_data.cpp (`run_inspect`)",
       {{ExitCode::kFailed,
         "the dataset cannot be opened or verified, `heatmap.svg` / `--html` cannot be written, or (`--docs`) "
         "a provenance file is missing or `--bucket` names no bucket"}}},
      {"data show",
       "src/cli/data_docs.cpp (`run_show_doc`)",
       {{ExitCode::kFailed, "the dataset cannot be opened, a provenance file is missing, or no document has that id"}}},
      {"data plan",
       "src/cli/cmd_data.cpp (`run_plan`)",
       {{ExitCode::kFailed, "the dataset cannot be opened"},
        {ExitCode::kUsage,
         "the `--config` run config or the `--mixture` file is bad (a bad `--set` too), or the mixture does not "
         "fit the dataset (e.g. an unknown bucket)"},
        {ExitCode::kRefused,
         "the plan would repeat data: some bucket needs more epochs than the mixture's `max_epochs` (the table "
         "or JSON is printed first)"}}},
      {"data decontaminate",
       "src/cli/data_decontaminate.cpp (`run_decontaminate`)",
       {{ExitCode::kFailed,
         "the dataset cannot be opened or verified, a provenance file is missing or malformed, or the new "
         "dataset cannot be written (`--out` exists and is not empty, write errors; nothing is left behind)"},
        {ExitCode::kUsage,
         "a `--tasks` file that cannot be read or has a bad line (named as FILE:LINE), `--n` below 1, "
         "`--threshold` outside [0, 1], or neither `--out` nor `--dry-run`"}}},
      {"tokenizer train",
       "src/cli/cmd_data.cpp (`run_tokenizer_train`)",
       {{ExitCode::kFailed, "any failure: inputs, training, or writing `--out`"}}},
      {"tokenizer encode",
       "src/cli/cmd_data.cpp (`run_tokenizer_encode`)",
       {{ExitCode::kFailed,
         "any failure: the model cannot be loaded, `--file` cannot be read, or the text is not valid UTF-8"}}},
      {"plan",
       "src/cli/cmd_plan.cpp",
       {{ExitCode::kUsage,
         "any failure, input or output: a bad `--tokens`; a model, cluster, layout or scaling-law file (or "
         "`--set`) that cannot be read or parsed; a layout the model and cluster cannot take; or `--html` cannot "
         "be written. A plan that does not fit in memory is a warning in the output, exit 0"}}},
      {"config reference", "src/cli/cmd_config.cpp", {}},
      {"config show",
       "src/cli/cmd_config.cpp (`show`)",
       {{ExitCode::kUsage, "any failure: unknown KIND, the file cannot be read or parsed, or a bad `--set`"}}},
      {"ladder fit",
       "src/cli/cmd_ladder.cpp",
       {{ExitCode::kFailed, "the `--out` fit file or the `--html` report cannot be written"},
        {ExitCode::kUsage,
         "bad input: the results file, an option (e.g. `--chance`), or data that cannot identify the law"}}},
      {"ladder run",
       "src/cli/cmd_ladder.cpp",
       {{ExitCode::kFailed,
         "a rung could not be trained or evaluated (no held-out data), or results.jsonl cannot be written"},
        {ExitCode::kUsage,
         "the ladder file or a `--set` is invalid, a rung cannot be planned, or `--out` holds "
         "another configuration's ladder or other files (nothing is written; `--move-aside`)"}}},
      {"mix search",
       "src/cli/cmd_mix.cpp",
       {{ExitCode::kFailed, "a proxy failed or broke its ledger check, a fit failed, or an output cannot be written"},
        {ExitCode::kUsage,
         "the search file or a `--set` is invalid, the search cannot be planned (dataset, hero budget, "
         "domains, target), or `--out` holds another configuration's search or other files (nothing is written; "
         "`--move-aside`)"}}},
      {"sweep",
       "src/cli/cmd_sweep.cpp",
       {{ExitCode::kFailed,
         "a run stopped in a way that is not data (a signal, an unexpected exit code), or results.jsonl / "
         "front.json cannot be written; runs that diverge (exit 1) or are refused (exit 2) are recorded and the "
         "search goes on"},
        {ExitCode::kUsage,
         "the sweep file or a `--set` is invalid, the base config or the run at the params' centres is refused, "
         "or `--out` holds another sweep or other files (nothing is written; `--move-aside`)"}}},
      {"arch compare",
       "src/cli/cmd_arch.cpp",
       {{ExitCode::kFailed,
         "a step failed: the benchmark of a candidate (its log is quoted), a ladder run, `generate`, or writing a "
         "record; a missing or refusing mpirun is recorded as the reason, not a failure"},
        {ExitCode::kUsage,
         "the comparison file or a `--set` is invalid (named by key), a candidate's ladder, benchmark or hero plan is "
         "refused, or `--out` holds another comparison or other files (nothing is written; `--move-aside`)"}}},
      {"arch report",
       "src/cli/cmd_arch.cpp",
       {{ExitCode::kFailed, "report.html cannot be written"},
        {ExitCode::kUsage, "DIR/compare.json is missing or not a comparison"}}},
      {"supervise",
       "src/cli/cmd_supervise.cpp",
       {{ExitCode::kFailed,
         "the run cannot go on: fewer usable ranks than `--min-ranks` after `--wait-for-hosts`, three launches in a "
         "row without progress, the job refused at start (a config error), `--max-restarts` reached, or the "
         "hosts file / state / Slurm allocation variables cannot be read"},
        {ExitCode::kUsage,
         "a bad option, train arguments the supervisor sets itself (`--run-dir`, `--resume`, `--heartbeat`), or "
         "`--launcher srun` or no `--hosts` outside a Slurm allocation (SLURM_JOB_ID unset)"},
        {ExitCode::kRequeue,
         "stopped by SIGUSR1 (Slurm's advance notice), passed on to the job, which stopped at a checkpoint (or "
         "the job exited 75 on its own notice): \"requeue me\"; started again, it resumes there"},
        {ExitCode::kStoppedBySigint, "stopped by Ctrl-C (SIGINT) the same way"},
        {ExitCode::kStoppedBySigterm, "stopped by SIGTERM the same way"}}},
      {"generate",
       "src/cli/cmd_generate.cpp",
       {{ExitCode::kFailed,
         "the checkpoint cannot be read or validated, the tokenizer cannot be found or loaded, or a prompt "
         "encodes to ids outside the model's vocabulary"},
        {ExitCode::kUsage,
         "no prompt, a `--prompts` file that cannot be read or is empty, a bad `--kv-dtype` / `--top-p`, "
         "or a KV cache and outputs (`--max-new-tokens` x prompts) that do not fit this machine's memory"}}},
      {"eval",
       "src/cli/cmd_eval.cpp",
       {{ExitCode::kFailed,
         "the checkpoint, tokenizer, dataset or mixture cannot be read, or `--out` cannot be written"},
        {ExitCode::kUsage,
         "a `--tasks` file that cannot be read, or a line of it that is not a valid task document (named as "
         "FILE:LINE), a generative item that needs more positions than `train.seq_len` (named; without "
         "`--past-seq-len`) or whose KV cache at `--batch` does not fit the machine's memory, a `--seq-len` past "
         "`train.seq_len` without `--past-seq-len`, or `--batches` past a bucket's held-out split"}}},
      {"tasks make passkey",
       "src/cli/cmd_tasks.cpp",
       {{ExitCode::kFailed, "the task file (`--out`) cannot be written"},
        {ExitCode::kUsage,
         "neither `--out` nor `--documents`; a `--tokenizer` that cannot be opened; a `--filler` input that is "
         "missing or holds no sentence; a length of `--tokens` shorter than the needle and question; a "
         "`--documents` directory that exists and is not empty, or cannot be written"}}},
      {"export",
       "src/cli/cmd_export.cpp",
       {{ExitCode::kFailed, "the checkpoint or tokenizer cannot be read, or the output cannot be written"},
        {ExitCode::kUsage,
         "a bad `--format` or `--max-shard-mb`, or `--out` holds an export of another checkpoint or "
         "format, or other files (nothing is written; `--move-aside`)"},
        {ExitCode::kRefused,
         "`--format hf` and the model uses a feature Qwen2MoeForCausalLM cannot represent (the message names "
         "the model.* key)"}}},
      {"import",
       "src/cli/cmd_export.cpp",
       {{ExitCode::kFailed,
         "the directory is not a Qwen2MoeForCausalLM (or raw moetrain) export, a config.json key or tensor has "
         "no counterpart in moetrain (named), or the run directory cannot be written"},
        {ExitCode::kUsage, "`--out` already holds a run (nothing is written; `--move-aside`)"}}},
      {"cli-reference", "src/cli/cli_reference.cpp", {}},
  });
  return kCodes;
}

}  // namespace mt
