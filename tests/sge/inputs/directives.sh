#!/bin/sh
#$ -N named_by_script
#$ -l h_rt=0:10:0
#$ -j y
echo "directives"
