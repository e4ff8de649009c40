// datscale's figures and how they are printed: a table for people, CSV for scripts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace datbench::scale {

struct Latency {
    std::uint32_t iters = 0;
    double median_us = 0, p99_us = 0;  // one way: half the round trip
};

struct ScaleFigures {
    std::uint32_t endpoints = 0;  // connected in all (1 busy + idle)
    std::uint32_t window = 0;
    // For endpoints-1 connections; raw TCP before the DAT endpoints and after they are gone.
    double tcp_setup_s = 0, tcp_after_s = 0, dat_setup_s = 0;
    std::uint64_t rss0_kib[2] = {}, rss1_kib[2] = {};  // [0] client, [1] server
    Latency one_before, many, one_after;
    std::int64_t max_request_dtos = 0, max_recv_dtos = 0, ia_max_eps = 0;
    std::uint64_t fd_limit[2] = {};
};

void print_scale(std::FILE *out, const ScaleFigures &f, const std::string &header);
bool write_scale_csv(const std::string &path, const ScaleFigures &f);

}  // namespace datbench::scale
