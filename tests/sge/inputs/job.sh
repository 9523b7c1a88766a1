#!/bin/sh
echo "job $JOB_ID ran"
