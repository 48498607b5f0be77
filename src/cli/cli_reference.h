// cli_reference.h — `moetrain cli-reference`: the Markdown reference of every
// command (docs/cli.md), generated from the CLI11 tree as main.cpp registered
// it, plus the exit codes of each command (cli/exit_codes.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/commands.h"

namespace mt {

// The page for `root` and every subcommand below it, in registration order.
// Hidden options and subcommands (empty CLI11 group) and -h/--help are left
// out; the page says once that every command takes --help.
std::string cli_reference_markdown(const CLI::App& root);

// Adds `cli-reference`, which prints cli_reference_markdown(app). The walk
// runs after parsing, so it sees every command wherever this is registered;
// its place among the registrations is only its place in the page.
void register_cli_reference(CLI::App& app, CommandAction& run);

}  // namespace mt
