// cli_reference.cpp — walks the CLI11 command tree and prints docs/cli.md.
//
// Why a top-level `cli-reference` and not `help --markdown`: a `help`
// command would promise `moetrain help train` and a plain-text mode, which
// would duplicate what CLI11's --help already prints; `cli-reference` does
// one thing and sits next to `config reference`, which generates
// docs/config.md the same way. Everything shown comes from what the
// cmd_*.cpp files registered (names, help text, defaults captured with
// capture_default_str(), required, validators, needs/excludes), so the page
// cannot drift from the parser; only the exit codes are hand-kept
// (cli/exit_codes.h), and the walk checks they cover exactly the leaves.
#include "cli/cli_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "cli/exit_codes.h"
#include "core/check.h"

namespace mt {
namespace {

// The program's name in the page: CLI11 renames the root to argv[0] while
// parsing, which would make the page depend on how the binary was invoked.
constexpr const char* kProgram = "moetrain";

// A Markdown table cell: one line, pipes escaped.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// `s` as inline code, with a longer fence when `s` holds a backtick.
std::string code(const std::string& s) {
  if (s.find('`') == std::string::npos) return "`" + s + "`";
  return "`` " + s + " ``";
}

// The anchor GitHub gives a heading: lower case, spaces to '-', other
// punctuation except '-' and '_' dropped.
std::string anchor(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    if (c == ' ') a += '-';
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
      a += char(std::tolower(static_cast<unsigned char>(c)));
  }
  return a;
}

bool hidden(const CLI::Option* o) { return o->get_group().empty(); }

std::string display_name(const CLI::Option* o) {
  if (!o->nonpositional()) return "<" + o->get_single_name() + ">";
  std::vector<std::string> names;
  for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  return fmt::format("{}", fmt::join(names, ", "));
}

// The one name a synopsis or a needs/excludes note uses: the first long name.
std::string short_display_name(const CLI::Option* o) {
  if (!o->nonpositional()) return "<" + o->get_single_name() + ">";
  if (!o->get_lnames().empty()) return "--" + o->get_lnames().front();
  return "-" + o->get_snames().front();
}

bool is_flag(const CLI::Option* o) { return o->get_expected_max() == 0; }

// CLI11 reports an option's type and its validators' descriptions as one
// string, "TYPE:DESC:DESC" (Option::get_type_name); split it back.
std::vector<std::string> split_type(const std::string& s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon - start));
    if (colon == std::string::npos) return parts;
    start = colon + 1;
  }
}

// "TEXT, one of `a`, `b`", "INT, positive", "FLOAT, in [0.5 - 0.999]".
std::string value_column(const CLI::Option* o) {
  if (is_flag(o)) return "flag";
  const std::vector<std::string> parts = split_type(o->get_type_name());
  const std::string& type = parts.front();
  std::string out = type.empty() ? "value" : code(type);
  // A vector option: CLI11 takes every value up to the next option, and the
  // option may be given again.
  if (o->get_expected_max() > 1) out += ", repeatable";
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string v = parts[i];
    if (v.size() >= 2 && v.front() == '{' && v.back() == '}') {  // CLI::IsMember: "{a,b,c}"
      std::vector<std::string> items;
      for (const std::string& item : CLI::detail::split(v.substr(1, v.size() - 2), ',')) items.push_back(code(item));
      out += ", one of " + fmt::format("{}", fmt::join(items, ", "));
      continue;
    }
    if (v.rfind(type + " ", 0) == 0) v = v.substr(type.size() + 1);  // CLI::Range: "FLOAT in [a - b]"
    if (std::none_of(v.begin(), v.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }))
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    out += ", " + v;  // "POSITIVE" -> "positive"
  }
  return out;
}

std::string description_column(const CLI::Option* o) {
  std::string d = o->get_description();
  auto sentence = [&](const std::string& s) { d += d.empty() ? s : (d.back() == '.' ? " " : ". ") + s; };
  std::vector<std::string> needs, excludes;
  for (const CLI::Option* n : o->get_needs()) needs.push_back(code(short_display_name(n)));
  for (const CLI::Option* e : o->get_excludes()) excludes.push_back(code(short_display_name(e)));
  std::sort(needs.begin(), needs.end());  // a std::set of pointers: sort by name for a stable page
  std::sort(excludes.begin(), excludes.end());
  if (!needs.empty()) sentence(fmt::format("Needs {}.", fmt::join(needs, ", ")));
  if (!excludes.empty()) sentence(fmt::format("Excludes {}.", fmt::join(excludes, ", ")));
  if (!o->get_envname().empty()) sentence(fmt::format("Environment: {}.", code(o->get_envname())));
  return d;
}

std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty() && !a->get_group().empty(); });
}

// The app's options, plus those of its option groups (CLI11 keeps a group as
// a nameless subcommand), positionals first, each in registration order.
std::vector<const CLI::Option*> visible_options(const CLI::App& app) {
  std::vector<const CLI::Option*> all = app.get_options();
  for (const CLI::App* g : app.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); }))
    for (const CLI::Option* o : g->get_options()) all.push_back(o);
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : all)
    if (!hidden(o) && o != app.get_help_ptr() && o != app.get_help_all_ptr()) out.push_back(o);
  std::stable_partition(out.begin(), out.end(), [](const CLI::Option* o) { return !o->nonpositional(); });
  return out;
}

std::string synopsis(const CLI::App& app, const std::string& path) {
  std::string s = path;
  bool optional = false;
  for (const CLI::Option* o : visible_options(app)) {
    std::string arg = short_display_name(o);
    if (o->nonpositional() && !is_flag(o)) arg += " " + split_type(o->get_type_name()).front();
    if (o->get_required()) s += " " + arg;
    else if (!o->nonpositional()) s += " [" + arg + "]";
    else optional = true;
  }
  if (optional) s += " [options]";
  if (!visible_subcommands(app).empty()) s += app.get_require_subcommand_min() > 0 ? " <command>" : " [<command>]";
  return s;
}

void walk(const CLI::App& app, const std::string& path, std::string& out, std::vector<std::string>& leaves) {
  const std::string heading = code(path);
  out += fmt::format("\n## {}\n\n{}\n\n```\n{}\n```\n", heading, app.get_description(), synopsis(app, path));
  const std::vector<const CLI::Option*> opts = visible_options(app);
  if (!opts.empty()) {
    out += "\n| argument / option | value | default | required | description |\n|---|---|---|---|---|\n";
    for (const CLI::Option* o : opts) {
      const std::string def = o->get_default_str();
      out += fmt::format("| {} | {} | {} | {} | {} |\n", cell(code(display_name(o))), cell(value_column(o)),
                         cell(def.empty() ? "" : code(def)), o->get_required() ? "yes" : "", cell(description_column(o)));
    }
  }
  const std::vector<const CLI::App*> subs = visible_subcommands(app);
  if (subs.empty()) {
    leaves.push_back(path.substr(std::string(kProgram).size() + 1));
    return;
  }
  out += fmt::format("\n{} a command, one of:\n\n", app.get_require_subcommand_min() > 0 ? "Requires" : "Takes");
  for (const CLI::App* s : subs) {
    const std::string child = path + " " + s->get_name();
    out += fmt::format("- [{}](#{}): {}\n", code(child), anchor(child), s->get_description());
  }
  for (const CLI::App* s : subs) walk(*s, path + " " + s->get_name(), out, leaves);
}

// Parse errors that this CLI can raise, with CLI11's codes taken from its
// enum so that a CLI11 upgrade that renumbers them updates the page.
struct ParseErrorCode {
  CLI::ExitCodes code;
  const char* name;
  const char* example;
};
const ParseErrorCode kParseErrors[] = {
    {CLI::ExitCodes::ConversionError, "ConversionError", "a value of the wrong type: `bench --threads x`"},
    {CLI::ExitCodes::ValidationError, "ValidationError",
     "a value the option's check rejects: `bench --precision fp16`, `bench --steps 0`"},
    {CLI::ExitCodes::RequiredError, "RequiredError",
     "a required option, argument or subcommand is missing: `data build --out D`, `ckpt`, `moetrain` alone"},
    {CLI::ExitCodes::RequiresError, "RequiresError",
     "an option without one it needs: `ladder fit R --target-params 1e9`"},
    {CLI::ExitCodes::ExcludesError, "ExcludesError",
     "two options that exclude each other: `tokenizer encode --model M --text a --file f`"},
    {CLI::ExitCodes::ExtrasError, "ExtrasError", "an unknown option or an extra argument: `train --nope`"},
};

std::string exit_code_section(const std::vector<std::string>& leaves) {
  std::string out =
      "\n## Exit codes\n\n"
      "Every command exits 0 on success, and `-h`/`--help` prints the help and exits 0 without running anything.\n"
      "The codes a command chooses itself mean, broadly: 1 a runtime failure (a file, a dataset, a checkpoint, a\n"
      "step), 2 a configuration or usage error found by the command, 3 `data plan` found data that would repeat\n"
      "(and, under mpirun, `train` and `bench` abort with 3 when a collective times out), 75 a run stopped at a\n"
      "checkpoint by Slurm's advance notice (SIGUSR1) that asks to be requeued. Each command's own\n"
      "list is below; the command line itself is checked first, by CLI11, whose errors have codes above 100:\n\n"
      "| code | CLI11 error | example |\n|---|---|---|\n";
  for (const ParseErrorCode& p : kParseErrors)
    out += fmt::format("| {} | `{}` | {} |\n", int(p.code), p.name, cell(p.example));
  out +=
      "\nA broken internal invariant (`MT_CHECK`) prints `MT_CHECK failed: ...` and aborts with SIGABRT (a shell\n"
      "shows 134); that is a bug, never the answer to bad input.\n\n"
      "| command | code | meaning | returned by |\n|---|---|---|---|\n";
  std::set<std::string> listed;
  for (const CommandExitCodes& c : command_exit_codes()) {
    MT_CHECK(std::find(leaves.begin(), leaves.end(), c.command) != leaves.end(),
             "cli/exit_codes.cpp lists '{}', which is not a command (any more)", c.command);
    MT_CHECK(listed.insert(c.command).second, "cli/exit_codes.cpp lists '{}' twice", c.command);
    out += fmt::format("| {} | 0 | success | {} |\n", code(std::string(kProgram) + " " + c.command), cell(c.where));
    for (const ExitCodeMeaning& e : c.codes) out += fmt::format("| | {} | {} | |\n", int(e.code), cell(e.meaning));
  }
  for (const std::string& leaf : leaves)
    MT_CHECK(listed.count(leaf) == 1, "command '{}' has no entry in cli/exit_codes.cpp", leaf);
  return out;
}

}  // namespace

std::string cli_reference_markdown(const CLI::App& root) {
  std::string out =
      "# Command-line reference\n\n"
      "Generated by `moetrain cli-reference` from the command tree as src/cli/ registers it (a test keeps this\n"
      "file current: `moetrain cli-reference > docs/cli.md`).\n\n"
      "Every command also takes `-h`/`--help`. Options take their value as `--opt VALUE` or `--opt=VALUE`. The\n"
      "default column shows the defaults the commands declare; where it is empty none is declared, and the\n"
      "description may say what happens without the option. The keys of the TOML files these commands read are\n"
      "in [config.md](config.md); exit codes are at the [end](#exit-codes).\n";
  std::vector<std::string> leaves;
  walk(root, kProgram, out, leaves);
  out += exit_code_section(leaves);
  return out;
}

void register_cli_reference(CLI::App& app, CommandAction& run) {
  CLI::App* sub = app.add_subcommand("cli-reference", "Print the Markdown reference of every command (docs/cli.md).");
  sub->callback([&app, &run] {
    run = [&app] {
      fmt::print("{}", cli_reference_markdown(app));
      return ExitCode::kOk;
    };
  });
}

}  // namespace mt
