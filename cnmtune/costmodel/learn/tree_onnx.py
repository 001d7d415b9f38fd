"""Gradient-boosted trees as an ONNX graph: scikit-learn's HistGradientBoostingRegressor, one per
log target, written as one ai.onnx.ml TreeEnsembleRegressor with the cost-model contract
(input ``features``, output ``log_targets``, cnmtune metadata), so the GBT baseline is saved
without pickle and scored by the same Scorer as the L2P network.

A HistGradientBoosting tree sends a row left when ``x[feature] <= threshold`` (NaN follows
``missing_go_to_left``) and adds the leaf values to a baseline. ONNX compares float32 inputs
with float32 thresholds, so each float64 threshold becomes the largest float32 not above it:
for every float32 x, ``x <= t`` and ``x <= that`` agree, and the graph routes rows exactly as
scikit-learn does (only the sum of the leaf values is done in float32).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from cnmtune.costmodel.learn import model_format as fmt

ML_DOMAIN, ML_OPSET = "ai.onnx.ml", 3


def _threshold(value: float) -> float:
    """The largest float32 not above `value`."""
    f = np.float32(value)
    return float(np.nextafter(f, np.float32(-np.inf)) if f > value else f)


def tree_ensemble_graph(models: Sequence, n_inputs: int) -> onnx.ModelProto:
    """One TreeEnsembleRegressor computing target k with the trees of ``models[k]``."""
    nodes: dict[str, list] = {k: [] for k in ("treeids", "nodeids", "featureids", "modes", "values",
                                              "truenodeids", "falsenodeids", "missing")}
    leaves: dict[str, list] = {k: [] for k in ("treeids", "nodeids", "ids", "weights")}
    tree = 0
    for target, model in enumerate(models):
        for predictors in model._predictors:
            for predictor in predictors:
                for i, node in enumerate(predictor.nodes):
                    leaf = bool(node["is_leaf"])
                    nodes["treeids"].append(tree)
                    nodes["nodeids"].append(i)
                    nodes["featureids"].append(0 if leaf else int(node["feature_idx"]))
                    nodes["modes"].append("LEAF" if leaf else "BRANCH_LEQ")
                    nodes["values"].append(0.0 if leaf else _threshold(float(node["num_threshold"])))
                    nodes["truenodeids"].append(0 if leaf else int(node["left"]))
                    nodes["falsenodeids"].append(0 if leaf else int(node["right"]))
                    nodes["missing"].append(0 if leaf else int(node["missing_go_to_left"]))
                    if leaf:
                        leaves["treeids"].append(tree)
                        leaves["nodeids"].append(i)
                        leaves["ids"].append(target)
                        leaves["weights"].append(float(node["value"]))
                tree += 1
    ensemble = helper.make_node(
        "TreeEnsembleRegressor", [fmt.INPUT_NAME], [fmt.OUTPUT_NAME], domain=ML_DOMAIN,
        n_targets=len(models), aggregate_function="SUM", post_transform="NONE",
        base_values=[float(np.ravel(m._baseline_prediction)[0]) for m in models],
        nodes_treeids=nodes["treeids"], nodes_nodeids=nodes["nodeids"], nodes_featureids=nodes["featureids"],
        nodes_modes=nodes["modes"], nodes_values=nodes["values"], nodes_truenodeids=nodes["truenodeids"],
        nodes_falsenodeids=nodes["falsenodeids"], nodes_missing_value_tracks_true=nodes["missing"],
        target_treeids=leaves["treeids"], target_nodeids=leaves["nodeids"], target_ids=leaves["ids"],
        target_weights=leaves["weights"])
    graph = helper.make_graph(
        [ensemble], "cnmtune_gbt",
        [helper.make_tensor_value_info(fmt.INPUT_NAME, TensorProto.FLOAT, [fmt.BATCH_AXIS, n_inputs])],
        [helper.make_tensor_value_info(fmt.OUTPUT_NAME, TensorProto.FLOAT, [fmt.BATCH_AXIS, len(models)])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", fmt.OPSET),
                                                   helper.make_opsetid(ML_DOMAIN, ML_OPSET)])
