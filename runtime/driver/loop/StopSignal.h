//===- StopSignal.h - SIGINT and SIGTERM as a request to stop ---*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A cluster pre-empts a job with SIGTERM, a user with Ctrl-C (SIGINT). While
// the trainer loop runs, either one only records the request: the loop
// finishes the step it is in, saves a checkpoint, says where, and main exits
// with 128 + the signal (130, 143), as a shell reports a killed command.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_LOOP_STOPSIGNAL_H
#define INFIR2_RUNTIME_DRIVER_LOOP_STOPSIGNAL_H

namespace infir2::rt {

/// From now on SIGINT and SIGTERM record a stop request instead of ending
/// the process.
void catchStopSignals();

/// The signal that asked to stop (SIGINT, SIGTERM), or 0.
int stopSignal();

/// "SIGINT", "SIGTERM" or "signal N".
const char *stopSignalName(int signal);

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_LOOP_STOPSIGNAL_H
