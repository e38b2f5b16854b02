//===- StopSignal.cpp - SIGINT and SIGTERM as a request to stop -----------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "loop/StopSignal.h"

#include <csignal>

namespace {
volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void recordStopSignal(int signal) { gStopSignal = signal; }
} // namespace

void infir2::rt::catchStopSignals() {
  std::signal(SIGINT, recordStopSignal);
  std::signal(SIGTERM, recordStopSignal);
}

int infir2::rt::stopSignal() { return gStopSignal; }

const char *infir2::rt::stopSignalName(int signal) {
  return signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
                             : "a signal";
}
