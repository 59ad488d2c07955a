// Prints the positions nnue-pytorch's data loader yields from a .binpack with given skips.
//
// Built by bench/nnue_loader.py against a checkout of official-stockfish/nnue-pytorch: this
// file includes the loader's headers and links with its training_data_loader.cpp, whose
// make_skip_predicate(DataloaderSkipConfig) is the predicate under test. Nothing of the
// loader is copied here.
//
//   nnue_loader_driver [--parallel] FILE.binpack filtered random_fen_skipping wld_filtered
//       early_fen_skipping soft_early_fen_skipping simple_eval_skipping param_index
//       pc_y0 pc_y1 pc_y2 pc_y3 pc_y4
//
// One line per position kept: "FEN|UCI move|score|ply|result". The default reader is the
// loader's sequential one (BinpackSfenInputStream: one thread, file order, not cyclic); with
// --parallel it is the one training uses (CompressedTrainingDataEntryParallelReader with
// concurrency 1: one reader thread, which shuffles what it buffers, so only the multiset of
// positions is comparable). The soft early-ply filter is off when soft_early_fen_skipping is
// 0; the ply_* points keep the loader's defaults (data_loader_config.ini).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "training_data_loader_internal.h"

namespace {

void print_entry(const binpack::TrainingDataEntry& e) {
    const std::string fen  = e.pos.fen();
    const std::string move = chess::uci::moveToUci(e.pos, e.move);
    std::printf("%s|%s|%d|%d|%d\n", fen.c_str(), move.c_str(), int(e.score), int(e.ply),
                int(e.result));
}

}  // namespace

int main(int argc, char** argv) {
    int  first    = 1;
    bool parallel = false;
    if (argc > 1 && std::strcmp(argv[1], "--parallel") == 0)
    {
        parallel = true;
        first    = 2;
    }
    if (argc - first != 13)
    {
        std::fprintf(stderr,
                     "usage: %s [--parallel] FILE filtered random_fen_skipping wld_filtered "
                     "early_fen_skipping soft_early_fen_skipping simple_eval_skipping "
                     "param_index pc_y0 pc_y1 pc_y2 pc_y3 pc_y4\n",
                     argv[0]);
        return 2;
    }
    const std::string path = argv[first];
    auto              arg  = [&](int i) { return argv[first + 1 + i]; };

    DataloaderSkipConfig config{};
    config.filtered                = std::atoi(arg(0)) != 0;
    config.random_fen_skipping     = std::atoi(arg(1));
    config.wld_filtered            = std::atoi(arg(2)) != 0;
    config.early_fen_skipping      = std::atoi(arg(3));
    config.soft_early_fen_skipping = std::atoi(arg(4));
    config.simple_eval_skipping    = std::atoi(arg(5));
    config.param_index             = std::atoi(arg(6));
    config.pc_y0                   = std::strtod(arg(7), nullptr);
    config.pc_y1                   = std::strtod(arg(8), nullptr);
    config.pc_y2                   = std::strtod(arg(9), nullptr);
    config.pc_y3                   = std::strtod(arg(10), nullptr);
    config.pc_y4                   = std::strtod(arg(11), nullptr);
    // The loader's defaults (data_loader_config.ini), used only by the soft early-ply filter.
    config.ply_x1 = 0.0;
    config.ply_y1 = 0.025;
    config.ply_x2 = 22.0;
    config.ply_y2 = 0.05;
    config.ply_x3 = 25.5;
    config.ply_y3 = 0.20;
    config.ply_x4 = 28.0;
    config.ply_y4 = 0.75;

    auto predicate = make_skip_predicate(config);
    auto stream =
      parallel ? training_data::open_sfen_input_file_parallel(1, {path}, false, predicate, 0, 1)
               : training_data::open_sfen_input_file(path, false, predicate);
    if (!stream)
    {
        std::fprintf(stderr, "cannot open %s\n", path.c_str());
        return 1;
    }
    std::size_t kept = 0;
    for (;;)
    {
        auto e = stream->next();
        if (!e.has_value())
            break;
        print_entry(*e);
        ++kept;
    }
    std::fprintf(stderr, "kept %zu\n", kept);
    return 0;
}
