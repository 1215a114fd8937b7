// commands: one function per `lockstep <command>`. Each returns the exit code; errors
// are exceptions, reported once by main().
#pragma once

#include <string>
#include <vector>

namespace lockstep::app {

using Args = std::vector<std::string>;

int cmd_shard(const Args& args);    // serial: no MPI
int cmd_inspect(const Args& args);  // serial: no MPI
int cmd_train(int* argc, char*** argv, const Args& args);
int cmd_evaluate(int* argc, char*** argv, const Args& args);
int cmd_doctor(int* argc, char*** argv, const Args& args);
int cmd_report(const Args& args);   // serial: no MPI
int cmd_predict(int* argc, char*** argv, const Args& args);
int cmd_export(const Args& args);   // serial: no MPI
int cmd_sweep(const Args& args);    // serial: no MPI

}  // namespace lockstep::app
