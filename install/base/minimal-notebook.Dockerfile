# A stand-in for Jupyter's minimal-notebook image, made from Debian's packages and PyPI, for
# machines that reach no container registry: install/image.sh builds it FROM a Debian made by
# mmdebstrap when quay.io/jupyter/minimal-notebook cannot be pulled. It offers what
# install/Dockerfile uses of that image: the user jovyan (NB_USER, NB_UID 1000, NB_GID 100),
# a Python environment on PATH whose pip the user may use, JupyterLab and jupyterhub-singleuser.
ARG DEBIAN_IMAGE=nbcuda-local/debian:bookworm
FROM ${DEBIAN_IMAGE}
ENV NB_USER=jovyan NB_UID=1000 NB_GID=100 CONDA_DIR=/opt/conda \
    LANG=C.UTF-8 SHELL=/bin/bash
ENV HOME=/home/${NB_USER} PATH=/opt/conda/bin:${PATH}
RUN useradd --no-log-init --create-home --shell /bin/bash --uid ${NB_UID} --gid ${NB_GID} ${NB_USER} \
 && python3 -m venv ${CONDA_DIR} \
 && ${CONDA_DIR}/bin/pip install --no-cache-dir 'jupyterlab>=4.2,<5' 'jupyterhub>=5,<6' 'notebook>=7,<8' \
 && chown -R ${NB_UID}:${NB_GID} ${CONDA_DIR}
USER ${NB_UID}
WORKDIR ${HOME}
EXPOSE 8888
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--no-browser"]
