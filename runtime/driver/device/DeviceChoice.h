//===- DeviceChoice.h - --device's choices ----------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What --device names, apart from the Device that honours it, so that the
// command line (config/Cli.h) needs no backend header.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DEVICE_DEVICECHOICE_H
#define INFIR2_RUNTIME_DRIVER_DEVICE_DEVICECHOICE_H

#include "infir2/runtime/Choices.h"

namespace infir2::rt {

/// --device: where the steps run.
enum class DeviceChoice { Auto, Cuda, Cpu };
template <> struct Choices<DeviceChoice> {
  static constexpr const char *flag = "--device";
  static constexpr Spelling<DeviceChoice> spellings[] = {
      {DeviceChoice::Auto, "auto"},
      {DeviceChoice::Cuda, "cuda"},
      {DeviceChoice::Cpu, "cpu"}};
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DEVICE_DEVICECHOICE_H
