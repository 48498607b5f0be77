// main.cpp — `moetrain <command>`: dispatches to one cmd_<name>.cpp each.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"moetrain — Mixture-of-Experts pretraining"};
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
