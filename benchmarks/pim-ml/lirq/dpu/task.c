/* lirq: the PIM-ML gradient kernel shared by LiRQ, LiRnQ, LoRQ and LoRnQ (../../common/pimml_task.c);
 * this kernel's support/common.h selects the model. */
#include "pimml_task.c"
